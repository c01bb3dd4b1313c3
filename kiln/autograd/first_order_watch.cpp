#include "kiln/autograd/first_order_watch.h"

#include <algorithm>

namespace kiln::autograd {
namespace {
thread_local FirstOrderWatch* t_watch = nullptr;
}

FirstOrderWatch::FirstOrderWatch() : outer_(t_watch) { t_watch = this; }
FirstOrderWatch::~FirstOrderWatch() { t_watch = outer_; }

void FirstOrderWatch::note(const std::string& op) {
  for (FirstOrderWatch* w = t_watch; w; w = w->outer_)
    if (std::find(w->ops_.begin(), w->ops_.end(), op) == w->ops_.end()) w->ops_.push_back(op);
}

}  // namespace kiln::autograd
