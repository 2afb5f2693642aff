// Compiled into every program that links pln::ops: a reference to libpln
// that keeps the library, and with it the pln operators it registers, in a
// program that calls none of its functions (a TorchScript or AOTInductor
// model runner), even with a linker that drops unreferenced libraries.
extern "C" const int pln_operators_registered;
__attribute__((used)) static const int* const pln_keep_operators = &pln_operators_registered;
