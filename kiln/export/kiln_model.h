/* The C interface of a model library that `kiln aot` built (docs/export.md, "AOT shared
 * libraries"). Plain C: a C or C++ program includes this header, links the model's library
 * (which needs libkiln.so at run time, found through the library's RUNPATH, but no compiler),
 * and runs the model:
 *
 *   KilnModel* m;
 *   if (kiln_model_create(&m) != 0) { fprintf(stderr, "%s\n", kiln_last_error()); ... }
 *   KilnTensor x = {data, KILN_FLOAT32, 2, sizes};
 *   KilnResult* r;
 *   if (kiln_model_run(m, &x, 1, &r) == 0) { KilnTensor y; kiln_result_output(r, 0, &y); ... }
 *   kiln_result_destroy(r);
 *   kiln_model_destroy(m);
 *
 * A process that uses several model libraries opens each with dlopen(RTLD_LOCAL): they define
 * the same names.
 * Every function is defined by the model's library. Every function that can fail returns 0 on success and non-zero on failure, with the message
 * in kiln_last_error() (per thread). kiln_model_run may be called from many threads at once. */
#ifndef KILN_EXPORT_KILN_MODEL_H
#define KILN_EXPORT_KILN_MODEL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct KilnModel KilnModel;
typedef struct KilnResult KilnResult;

/* kiln::ScalarType's values. */
enum KilnDtype {
  KILN_BOOL = 0,
  KILN_UINT8 = 1,
  KILN_INT8 = 2,
  KILN_INT16 = 3,
  KILN_INT32 = 4,
  KILN_INT64 = 5,
  KILN_FLOAT16 = 6,
  KILN_BFLOAT16 = 7,
  KILN_FLOAT32 = 8,
  KILN_FLOAT64 = 9
};

/* A dense row-major tensor: ndim sizes, elements of dtype at data. Inputs are read in place
 * (not copied); outputs stay valid until their KilnResult is destroyed. */
typedef struct KilnTensor {
  void* data;
  int32_t dtype;
  int32_t ndim;
  const int64_t* sizes;
} KilnTensor;

/* What an input or output of the model is: a dim whose size varies has size -1 and its range
 * in min and max (a fixed dim has size == min == max). */
typedef struct KilnTensorInfo {
  int32_t dtype;
  int32_t ndim;
  const int64_t* sizes;
  const int64_t* min;
  const int64_t* max;
} KilnTensorInfo;

/* Loads the program and the kernels built into the library. */
int kiln_model_create(KilnModel** model);
void kiln_model_destroy(KilnModel* model);
const char* kiln_last_error(void);
size_t kiln_model_num_inputs(const KilnModel* model);
size_t kiln_model_num_outputs(const KilnModel* model);
int kiln_model_input_info(const KilnModel* model, size_t i, KilnTensorInfo* info);
int kiln_model_output_info(const KilnModel* model, size_t i, KilnTensorInfo* info);
/* Runs the model on n_inputs tensors (checked against the model's signature and ranges) into a
 * new result, which the caller destroys. No gradients are recorded. */
int kiln_model_run(KilnModel* model, const KilnTensor* inputs, size_t n_inputs,
                   KilnResult** result);
size_t kiln_result_num_outputs(const KilnResult* result);
int kiln_result_output(const KilnResult* result, size_t i, KilnTensor* output);
void kiln_result_destroy(KilnResult* result);

#ifdef __cplusplus
}
#endif

#endif /* KILN_EXPORT_KILN_MODEL_H */
