#pragma once
// export_program: captures a function or module whole, with named dynamic dims, into an
// ExportedProgram (torch.export.export). The capture is kiln::compile's (ARCHITECTURE.md §7,
// §10); what it cannot capture whole (a read of a value, a data-dependent size, a random op) is
// an error here, not a graph break.
//
//   kiln::Dim batch("batch", 1, 64), seq("seq", 2, 512);
//   auto program = kiln::export_program(model, {tokens}, {{{0, batch}, {1, seq}}});
//   program.save("model.kpt");
//   auto loaded = kiln::load_program("model.kpt");
//   std::vector<Tensor> out = loaded.run({tokens});
#include <memory>
#include <type_traits>
#include <vector>

#include "kiln/compile/compile.h"
#include "kiln/export/dim.h"
#include "kiln/export/exported_program.h"

namespace kiln {

namespace export_detail {

ExportedProgram export_flat(compiler::FlatFn fn, const std::vector<Tensor>& example_inputs,
                            const DynamicShapes& dynamic_shapes,
                            const OrderedDict<std::string, Tensor>& parameters = {},
                            const OrderedDict<std::string, Tensor>& buffers = {});

template <class F>
compiler::FlatFn tensor_fn(F fn) {
  using Signature = typename compiler::signature_of<std::decay_t<F>>::type;
  return [&]<class R, class... A>(std::type_identity<R(A...)>) {
    static_assert((std::is_same_v<std::decay_t<A>, Tensor> && ...),
                  "export_program: the function's parameters must all be tensors");
    return compiler::flat_fn<R, A...>(std::move(fn));
  }(std::type_identity<Signature>());
}

}  // namespace export_detail

// A function of tensors. Its captured tensors become constants (parameters when they require
// grad). Sizes are static except the dims `dynamic_shapes` names.
template <class F>
requires(!compiler::ModulePointer<F> && !compiler::ModuleHolder<F>) ExportedProgram
    export_program(F fn, const std::vector<Tensor>& example_inputs,
                   const DynamicShapes& dynamic_shapes = {}) {
  return export_detail::export_flat(export_detail::tensor_fn(std::move(fn)), example_inputs,
                                    dynamic_shapes);
}

// A module's forward, in its current mode (train() or eval()); its parameters and buffers keep
// their names ("encoder.layers.0.linear1.weight"), and the program shares their tensors.
template <class M>
requires compiler::ModulePointer<std::shared_ptr<M>> ExportedProgram
export_program(std::shared_ptr<M> module, const std::vector<Tensor>& example_inputs,
               const DynamicShapes& dynamic_shapes = {}) {
  return export_detail::export_flat(export_detail::tensor_fn(compiler::module_forward(module)),
                                    example_inputs, dynamic_shapes, module->named_parameters(),
                                    module->named_buffers());
}
template <class H>
requires compiler::ModuleHolder<H> ExportedProgram
export_program(const H& holder, const std::vector<Tensor>& example_inputs,
               const DynamicShapes& dynamic_shapes = {}) {
  return export_program(holder.ptr(), example_inputs, dynamic_shapes);
}

}  // namespace kiln
