#pragma once
// Quantized tensors in safetensors files: the stored integers are written as a plain I8, U8 or
// I32 tensor (what other readers see), and the parameters as a metadata entry beside it,
//   "kiln.quantized.<name>": {"dtype": "qint8", "scales": [...], "zero_points": [...],
//                             "axis": -1}
// (axis -1: per tensor). Kiln's reader puts them back together and drops those entries.
#include <map>
#include <string>

#include "kiln/core/tensor.h"
#include "kiln/io/reporter.h"
#include "kiln/io/safetensors.h"

namespace kiln::io::detail {

// `metadata` with an entry for each quantized tensor.
std::map<std::string, std::string> with_quantizers(
    const std::map<std::string, Tensor>& tensors,
    const std::map<std::string, std::string>& metadata, const Reporter& r);
// What a quantized tensor is written as: its stored integers.
Tensor stored_values(const Tensor& t);
// Wraps each tensor that has an entry and removes the entries; a malformed entry is an error.
void attach_quantizers(SafetensorsFile& file, const Reporter& r);

}  // namespace kiln::io::detail
