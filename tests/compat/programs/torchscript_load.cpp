// A libtorch program that loads a TorchScript model: Kiln must refuse it at compile time with a
// message that points to what to do instead (ctest compat.torchscript_is_a_clear_compile_error).
#include <torch/script.h>

int main(int argc, char** argv) {
  torch::jit::script::Module module = torch::jit::load(argv[argc - 1]);
  return module.forward({torch::ones({1, 3})}).toTensor().numel() == 0;
}
