#include "kiln/core/error.h"

#include <new>

namespace kiln::detail {
void throw_error(const std::string& msg) { throw Error(msg); }

namespace {
bool names_op(const std::exception& e, std::string_view op) {
  const std::string_view what = e.what();
  return what.size() > op.size() && what.starts_with(op) && what[op.size()] == ':';
}
std::string in_op(std::string_view op, const std::exception& e, const std::string& args) {
  return str_cat(op, ": ", e.what(), args.empty() ? "" : "; ", args);
}
}  // namespace

void rethrow_in(std::string_view op, const std::string& args) {
  try {
    throw;
  } catch (const OverflowError& e) {
    if (names_op(e, op)) throw;
    throw OverflowError(in_op(op, e, args));
  } catch (const ValueError& e) {
    if (names_op(e, op)) throw;
    throw ValueError(in_op(op, e, args));
  } catch (const OutOfMemoryError& e) {
    if (names_op(e, op)) throw;
    throw OutOfMemoryError(in_op(op, e, args));
  } catch (const std::bad_alloc& e) {
    throw OutOfMemoryError(in_op(op, e, args));
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {  // the standard library's, from inside a kernel
    throw Error(in_op(op, e, args));
  }
}
}  // namespace kiln::detail
