/* A plain C program that runs a model library built by `kiln aot` (tests/export/aot_test.cpp).
 * usage: aot_main OUT.bin BATCH...
 * For each batch size it runs the model on x[i] = ((i * 37) % 101) / 50 - 1 (input 0's dynamic
 * dims set to the batch) and appends output 0 to OUT.bin as int64 ndim, int64 sizes[ndim] and
 * the float32 elements. A batch the model refuses prints "refused: <message>" and goes on. */
#include <stdio.h>
#include <stdlib.h>

#include "kiln/export/kiln_model.h"

static void print_info(const char* what, size_t i, const KilnTensorInfo* info) {
  printf("%s %zu: dtype %d, sizes [", what, i, (int)info->dtype);
  for (int32_t d = 0; d < info->ndim; ++d) {
    if (info->sizes[d] < 0)
      printf("%s%lld..%lld", d ? ", " : "", (long long)info->min[d], (long long)info->max[d]);
    else
      printf("%s%lld", d ? ", " : "", (long long)info->sizes[d]);
  }
  printf("]\n");
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: aot_main OUT.bin BATCH...\n");
    return 2;
  }
  KilnModel* model = NULL;
  if (kiln_model_create(&model) != 0) {
    fprintf(stderr, "kiln_model_create: %s\n", kiln_last_error());
    return 1;
  }
  KilnTensorInfo in, out_info;
  if (kiln_model_input_info(model, 0, &in) != 0 || kiln_model_output_info(model, 0, &out_info)) {
    fprintf(stderr, "info: %s\n", kiln_last_error());
    return 1;
  }
  printf("inputs %zu, outputs %zu\n", kiln_model_num_inputs(model), kiln_model_num_outputs(model));
  print_info("input", 0, &in);
  print_info("output", 0, &out_info);
  if (kiln_model_input_info(model, 7, &in) == 0) return 1;
  printf("input 7: %s\n", kiln_last_error());
  kiln_model_input_info(model, 0, &in);

  FILE* f = fopen(argv[1], "wb");
  if (!f) return 1;
  for (int a = 2; a < argc; ++a) {
    const long long batch = atoll(argv[a]);
    int64_t sizes[8];
    int64_t n = 1;
    for (int32_t d = 0; d < in.ndim; ++d) {
      sizes[d] = in.sizes[d] < 0 ? batch : in.sizes[d];
      n *= sizes[d];
    }
    float* x = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    for (int64_t i = 0; i < n; ++i) x[i] = (float)((i * 37) % 101) / 50.0f - 1.0f;
    KilnTensor input = {x, KILN_FLOAT32, in.ndim, sizes};
    KilnResult* result = NULL;
    if (kiln_model_run(model, &input, 1, &result) != 0) {
      printf("refused: %s\n", kiln_last_error());
      free(x);
      continue;
    }
    KilnTensor y;
    if (kiln_result_output(result, 0, &y) != 0 || y.dtype != KILN_FLOAT32) return 1;
    int64_t ndim = y.ndim, count = 1;
    fwrite(&ndim, sizeof ndim, 1, f);
    fwrite(y.sizes, sizeof(int64_t), (size_t)ndim, f);
    for (int32_t d = 0; d < y.ndim; ++d) count *= y.sizes[d];
    fwrite(y.data, sizeof(float), (size_t)count, f);
    printf("batch %lld: %zu outputs\n", batch, kiln_result_num_outputs(result));
    kiln_result_destroy(result);
    free(x);
  }
  fclose(f);
  kiln_model_destroy(model);
  return 0;
}
