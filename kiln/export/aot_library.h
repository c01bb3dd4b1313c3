/* What a model library built by `kiln aot` hands libkiln when it is created (kiln_model.h):
 * the program file's bytes, built into the library, and the kernels of each generated unit.
 * The library's generated code and libkiln must agree on it: both check abi_version and
 * kiln_version. */
#ifndef KILN_EXPORT_AOT_LIBRARY_H
#define KILN_EXPORT_AOT_LIBRARY_H

#include <stddef.h>
#include <stdint.h>

#include "kiln/compile/codegen/runtime.h"
#include "kiln/export/kiln_model.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_AOT_ABI_VERSION 1

typedef struct KilnAotUnit {
  const char* key; /* PrebuiltKernels::key of the unit's source */
  int64_t num_kernels;
  const KilnKernelFn* kernels; /* kernel i of the unit at index i */
} KilnAotUnit;

typedef struct KilnAotLibrary {
  int32_t abi_version;
  int32_t isa; /* kiln::cpu::CpuCapability the units were generated for */
  const char* kiln_version;
  const unsigned char* program; /* the .kpt file */
  size_t program_size;
  const KilnAotUnit* units;
  int64_t num_units;
} KilnAotLibrary;

/* Defined by libkiln: kiln_model.h's functions, which each model library defines by calling
 * these (aot_model_api.inc), so that a program links the model's library alone. */
int kiln_aot_create(const KilnAotLibrary* library, KilnModel** model);
void kiln_aot_destroy(KilnModel* model);
const char* kiln_aot_last_error(void);
size_t kiln_aot_num_inputs(const KilnModel* model);
size_t kiln_aot_num_outputs(const KilnModel* model);
int kiln_aot_input_info(const KilnModel* model, size_t i, KilnTensorInfo* info);
int kiln_aot_output_info(const KilnModel* model, size_t i, KilnTensorInfo* info);
int kiln_aot_run(KilnModel* model, const KilnTensor* inputs, size_t n_inputs, KilnResult** result);
size_t kiln_aot_result_num_outputs(const KilnResult* result);
int kiln_aot_result_output(const KilnResult* result, size_t i, KilnTensor* output);
void kiln_aot_result_destroy(KilnResult* result);

#ifdef __cplusplus
}
#endif

#endif /* KILN_EXPORT_AOT_LIBRARY_H */
