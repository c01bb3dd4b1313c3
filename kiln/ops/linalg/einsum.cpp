// einsum: parses the equation into labelled dims, takes diagonals of repeated labels, sums out
// labels nobody needs, then contracts the operands left to right with permute/reshape/bmm.
#include <algorithm>
#include <set>

#include "kiln/core/error.h"
#include "kiln/ops/linalg.h"
#include "kiln/ops/ops.h"

namespace kiln {
namespace {

// Labels: 'A'-'Z' are 0-25 and 'a'-'z' 26-51 (so an implicit output lists uppercase first, as
// PyTorch); the dims an ellipsis covers get kLetters + their position in the broadcast ellipsis.
constexpr int kLetters = 52;

int letter_label(char c, size_t pos) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return 26 + (c - 'a');
  KILN_FAIL("einsum: invalid subscript '", c, "' given at index ", pos,
            " in the equation string, subscripts must be in [a-zA-Z]");
}

char label_char(int label) {
  return label < 26 ? static_cast<char>('A' + label) : static_cast<char>('a' + label - 26);
}

// One side of the equation for one operand: letters, with kEllipsis where "..." stands.
constexpr int kEllipsis = -1;
struct Subscripts {
  std::vector<int> labels;
  bool has_ellipsis = false;
};

Subscripts parse_subscripts(const std::string& eq, size_t begin, size_t end, const char* what) {
  Subscripts s;
  for (size_t i = begin; i < end; ++i) {
    if (eq[i] == '.') {
      KILN_CHECK(i + 2 < end && eq[i + 1] == '.' && eq[i + 2] == '.', "einsum: found '.' for ",
                 what, " that is not part of any ellipsis");
      KILN_CHECK(!s.has_ellipsis, "einsum: found '...' more than once for ", what);
      s.has_ellipsis = true;
      s.labels.push_back(kEllipsis);
      i += 2;
    } else {
      s.labels.push_back(letter_label(eq[i], i));
    }
  }
  return s;
}

// A tensor whose dim d carries labels[d].
struct Labelled {
  Tensor t;
  std::vector<int> labels;
};

// Labels of operand `index`, with the ellipsis expanded to the trailing-aligned ellipsis labels.
std::vector<int> operand_labels(const Subscripts& s, const Tensor& t, size_t index,
                                int64_t max_ellipsis) {
  const int64_t named = static_cast<int64_t>(s.labels.size()) - (s.has_ellipsis ? 1 : 0);
  if (!s.has_ellipsis) {
    KILN_CHECK(t.dim() == named, "einsum: the number of subscripts in the equation (", named,
               ") does not match the number of dimensions (", t.dim(), ") for operand ", index,
               " and no ellipsis was given");
  } else {
    KILN_CHECK(t.dim() >= named, "einsum: the number of subscripts in the equation (", named,
               ") is more than the number of dimensions (", t.dim(), ") for operand ", index);
  }
  std::vector<int> out;
  const int64_t ell = t.dim() - named;
  for (int l : s.labels) {
    if (l != kEllipsis) {
      out.push_back(l);
      continue;
    }
    for (int64_t e = 0; e < ell; ++e)
      out.push_back(kLetters + static_cast<int>(max_ellipsis - ell + e));
  }
  return out;
}

// Repeated labels within one operand select its diagonal: one dim whose stride is the sum.
Labelled take_diagonals(const Tensor& t, const std::vector<int>& labels, size_t index) {
  Labelled r{t, {}};
  SymShape sizes, strides;
  for (size_t d = 0; d < labels.size(); ++d) {
    auto it = std::find(r.labels.begin(), r.labels.end(), labels[d]);
    if (it == r.labels.end()) {
      r.labels.push_back(labels[d]);
      sizes.push_back(t.sym_size(static_cast<int64_t>(d)));
      strides.push_back(t.sym_stride(static_cast<int64_t>(d)));
      continue;
    }
    const size_t j = static_cast<size_t>(it - r.labels.begin());
    KILN_CHECK(sizes[j] == t.sym_size(static_cast<int64_t>(d)), "einsum: subscript ",
               label_char(labels[d]), " is repeated for operand ", index,
               " but the sizes don't match, ", sizes[j],
               " != ", t.sym_size(static_cast<int64_t>(d)));
    strides[j] = strides[j] + t.sym_stride(static_cast<int64_t>(d));
  }
  if (r.labels.size() < labels.size()) r.t = t.as_strided(sizes, strides, t.sym_storage_offset());
  return r;
}

void sum_out(Labelled& x, const std::set<int>& keep) {
  std::vector<int64_t> dims;
  std::vector<int> kept;
  for (size_t d = 0; d < x.labels.size(); ++d) {
    if (keep.count(x.labels[d]))
      kept.push_back(x.labels[d]);
    else
      dims.push_back(static_cast<int64_t>(d));
  }
  if (dims.empty()) return;
  x.t = x.t.sum(dims);
  x.labels = std::move(kept);
}

int64_t position(const std::vector<int>& labels, int l) {
  auto it = std::find(labels.begin(), labels.end(), l);
  return it == labels.end() ? -1 : static_cast<int64_t>(it - labels.begin());
}

// x permuted to `order` (labels all in x) and reshaped to the given groups' sizes multiplied.
Tensor grouped(const Labelled& x, const std::vector<std::vector<int>>& groups) {
  std::vector<int64_t> perm;
  SymShape shape;
  for (const auto& g : groups) {
    SymInt n = 1;
    for (int l : g) {
      const int64_t d = position(x.labels, l);
      perm.push_back(d);
      n = n * x.t.sym_size(d);
    }
    shape.push_back(n);
  }
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i)
    identity = identity && perm[i] == static_cast<int64_t>(i);
  Tensor t = identity ? x.t : x.t.permute(perm);
  return t.reshape(shape);
}

// a and b contracted over their shared labels not in `keep`; shared labels in `keep` are batch.
Labelled contract(Labelled a, Labelled b, const std::set<int>& keep) {
  std::set<int> keep_a = keep, keep_b = keep;
  keep_a.insert(b.labels.begin(), b.labels.end());
  keep_b.insert(a.labels.begin(), a.labels.end());
  sum_out(a, keep_a);
  sum_out(b, keep_b);
  std::vector<int> batch, a_only, contracted, b_only;
  for (int l : a.labels) {
    const int64_t db = position(b.labels, l);
    if (db < 0) {
      a_only.push_back(l);
      continue;
    }
    (keep.count(l) ? batch : contracted).push_back(l);
    // Size-1 dims broadcast against the other operand's size.
    const int64_t da = position(a.labels, l);
    const SymInt sa = a.t.sym_size(da), sb = b.t.sym_size(db);
    if (sa == sb) continue;
    Labelled& small = sa == 1 ? a : b;
    SymShape target = small.t.sym_sizes();
    target[sa == 1 ? da : db] = sa == 1 ? sb : sa;
    small.t = small.t.expand(target);
  }
  for (int l : b.labels)
    if (position(a.labels, l) < 0) b_only.push_back(l);
  SymShape out_shape;
  for (int l : batch) out_shape.push_back(a.t.sym_size(position(a.labels, l)));
  for (int l : a_only) out_shape.push_back(a.t.sym_size(position(a.labels, l)));
  for (int l : b_only) out_shape.push_back(b.t.sym_size(position(b.labels, l)));
  Tensor a3 = grouped(a, {batch, a_only, contracted});
  Tensor b3 = grouped(b, {batch, contracted, b_only});
  Labelled r{bmm(a3, b3).view(out_shape), batch};
  r.labels.insert(r.labels.end(), a_only.begin(), a_only.end());
  r.labels.insert(r.labels.end(), b_only.begin(), b_only.end());
  return r;
}

}  // namespace

Tensor einsum(std::string_view equation_in, const std::vector<Tensor>& operands) {
  std::string eq;
  for (char c : equation_in)
    if (c != ' ') eq.push_back(c);
  KILN_CHECK(!operands.empty(), "einsum: must provide at least one operand");
  for (size_t i = 1; i < operands.size(); ++i) {
    KILN_CHECK(operands[i].dtype() == operands[0].dtype(),
               "einsum: expected all operands to have the same dtype, but got ",
               operands[0].dtype(), " for operand 0 and ", operands[i].dtype(), " for operand ", i);
  }
  const size_t arrow = eq.find("->");
  const size_t lhs_end = arrow == std::string::npos ? eq.size() : arrow;

  // Left-hand side: one subscript list per operand.
  std::vector<Subscripts> subs;
  for (size_t begin = 0;;) {
    size_t comma = eq.find(',', begin);
    size_t end = comma == std::string::npos || comma > lhs_end ? lhs_end : comma;
    KILN_CHECK(subs.size() < operands.size(), "einsum: fewer operands (", operands.size(),
               ") were provided than specified in the equation '", eq, "'");
    subs.push_back(
        parse_subscripts(eq, begin, end, ("operand " + std::to_string(subs.size())).c_str()));
    if (end == lhs_end) break;
    begin = end + 1;
  }
  KILN_CHECK(subs.size() == operands.size(), "einsum: more operands (", operands.size(),
             ") were provided than specified in the equation '", eq, "' (", subs.size(), ")");

  int64_t max_ellipsis = 0;
  for (size_t i = 0; i < operands.size(); ++i) {
    if (!subs[i].has_ellipsis) continue;
    const int64_t named = static_cast<int64_t>(subs[i].labels.size()) - 1;
    max_ellipsis = std::max(max_ellipsis, operands[i].dim() - named);
  }
  std::vector<Labelled> ops;
  std::vector<int> count(kLetters + max_ellipsis, 0);
  for (size_t i = 0; i < operands.size(); ++i) {
    std::vector<int> labels = operand_labels(subs[i], operands[i], i, max_ellipsis);
    for (int l : labels) ++count[l];  // occurrences in the equation: "ii" is a trace
    ops.push_back(take_diagonals(operands[i], labels, i));
  }

  // Output labels: explicit, or the ellipsis then the labels seen once, in label order.
  std::vector<int> out;
  if (arrow != std::string::npos) {
    Subscripts o = parse_subscripts(eq, arrow + 2, eq.size(), "the output");
    for (int l : o.labels) {
      if (l == kEllipsis) {
        for (int64_t e = 0; e < max_ellipsis; ++e) out.push_back(kLetters + static_cast<int>(e));
        continue;
      }
      KILN_CHECK(count[l] > 0, "einsum: output subscript ", label_char(l),
                 " does not appear in the equation for any input operand");
      KILN_CHECK(position(out, l) < 0, "einsum: output subscript ", label_char(l),
                 " appears more than once in the output");
      out.push_back(l);
    }
  } else {
    for (int64_t e = 0; e < max_ellipsis; ++e) out.push_back(kLetters + static_cast<int>(e));
    for (int l = 0; l < kLetters; ++l)
      if (count[l] == 1) out.push_back(l);
  }

  // Labels each operand's sizes agree on (1 broadcasts).
  std::vector<SymInt> label_size(count.size(), SymInt(1));
  for (size_t i = 0; i < ops.size(); ++i)
    for (size_t d = 0; d < ops[i].labels.size(); ++d) {
      const int l = ops[i].labels[d];
      const SymInt s = ops[i].t.sym_size(static_cast<int64_t>(d));
      if (s == 1) continue;
      KILN_CHECK(
          label_size[l] == 1 || label_size[l] == s, "einsum: operands do not broadcast: ",
          l < kLetters ? std::string("subscript ") + label_char(l) : std::string("an ellipsis dim"),
          " has size ", label_size[l], " and ", s, " (operand ", i, ")");
      label_size[l] = s;
    }

  // Contract left to right, keeping what the output or a later operand still needs.
  const std::set<int> out_set(out.begin(), out.end());
  Labelled acc = ops[0];
  for (size_t i = 1; i < ops.size(); ++i) {
    std::set<int> keep = out_set;
    for (size_t j = i + 1; j < ops.size(); ++j)
      keep.insert(ops[j].labels.begin(), ops[j].labels.end());
    acc = contract(std::move(acc), ops[i], keep);
  }
  sum_out(acc, out_set);
  std::vector<int64_t> perm;
  bool identity = true;
  for (int l : out) {
    perm.push_back(position(acc.labels, l));
    identity = identity && perm.back() == static_cast<int64_t>(perm.size() - 1);
  }
  // An operand returned unchanged still comes back as a new view, as in PyTorch.
  if (identity && !acc.t.is_same(operands[0])) return acc.t;
  return acc.t.permute(perm);
}

}  // namespace kiln
