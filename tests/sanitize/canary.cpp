// Under -DPLN_SANITIZE=ON: two known bugs, which the sanitizers must report,
// so that a clean `make test-sanitize` means the checks were on.
//   pln_sanitize_canary heap|overflow
#include <cstdio>
#include <cstdlib>
#include <cstring>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const int n = std::atoi("8");  // not a constant the compiler can see through
  if (std::strcmp(argv[1], "heap") == 0) {
    int* values = new int[n]();
    const int past_the_end = values[n];  // AddressSanitizer: heap-buffer-overflow
    delete[] values;
    return past_the_end == 12345;
  }
  if (std::strcmp(argv[1], "overflow") == 0) {
    volatile int big = 2147483647 - n + 1;
    std::printf("%d\n", big + n);  // UBSan: signed integer overflow
    return 0;
  }
  return 2;
}
