// No include guard: isa_expand.h includes this once per level, with KILN_ISA_NAMESPACE,
// KILN_ISA_TARGETS (GCC target options), KILN_VEC_BITS and KILN_VEC_BF16 defined; it compiles
// KILN_ISA_BODY into kiln::cpu::KILN_ISA_NAMESPACE and undefines the four.
#define KILN_ISA_PRAGMA_TEXT(text) _Pragma(#text)
#define KILN_ISA_PRAGMA_TARGET(targets) KILN_ISA_PRAGMA_TEXT(GCC target(targets))

#pragma GCC push_options
KILN_ISA_PRAGMA_TARGET(KILN_ISA_TARGETS)
namespace kiln::cpu::KILN_ISA_NAMESPACE {
#include KILN_ISA_BODY
}  // namespace kiln::cpu::KILN_ISA_NAMESPACE
#pragma GCC pop_options

#undef KILN_ISA_PRAGMA_TARGET
#undef KILN_ISA_PRAGMA_TEXT
#undef KILN_ISA_NAMESPACE
#undef KILN_ISA_TARGETS
#undef KILN_VEC_BITS
#undef KILN_VEC_BF16
