// Train in Python, run in C++: runs a model that Python exported and compiled
// with AOTInductor (torch._inductor.aoti_compile_and_package) on inputs saved
// with torch.save, and saves its outputs (a tuple) so that torch.load reads them.
//
//     run_exported model.pt2 inputs.pt outputs.pt
//
// `inputs.pt` holds a list (or tuple) of tensors, the model's positional
// arguments. The program calls no pln function itself: linking pln::ops is
// what registers the pln operators the compiled model calls.

#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <fstream>
#include <iostream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

std::vector<char> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<at::Tensor> tensors_of(const c10::IValue& value, const std::string& path) {
  std::vector<at::Tensor> tensors;
  if (value.isTensor()) return {value.toTensor()};
  if (value.isTensorList()) return value.toTensorVector();
  if (value.isList() || value.isTuple()) {
    const auto items = value.isList() ? value.toListRef().vec() : value.toTupleRef().elements().vec();
    for (const auto& item : items) {
      if (!item.isTensor()) throw std::runtime_error(path + ": expected a list of tensors, found a " + item.tagKind());
      tensors.push_back(item.toTensor());
    }
    return tensors;
  }
  throw std::runtime_error(path + ": expected a tensor or a list of tensors, found a " + value.tagKind());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: " << argv[0] << " MODEL.pt2 INPUTS.pt OUTPUTS.pt\n";
    return 2;
  }
  try {
    // The loader's own error for a missing file names neither the file nor the problem.
    if (!std::ifstream(argv[1])) throw std::runtime_error(std::string("cannot open ") + argv[1]);
    torch::inductor::AOTIModelPackageLoader model(argv[1]);
    const auto inputs = tensors_of(torch::jit::pickle_load(read_file(argv[2])), argv[2]);
    const std::vector<at::Tensor> outputs = model.run(inputs);
    // A tuple of tensors: what torch.load reads with weights_only=True.
    const auto bytes = torch::jit::pickle_save(
        c10::ivalue::Tuple::create(std::vector<c10::IValue>(outputs.begin(), outputs.end())));
    std::ofstream out(argv[3], std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) throw std::runtime_error(std::string("cannot write ") + argv[3]);
    std::cout << "run_exported: " << inputs.size() << " input(s), " << outputs.size() << " output(s) of shape";
    for (const auto& t : outputs) std::cout << " " << t.sizes();
    std::cout << "\n";
  } catch (const c10::Error& e) {
    std::cerr << "run_exported: " << e.what_without_backtrace() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "run_exported: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
