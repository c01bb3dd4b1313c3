#include "kiln/distributed/file_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <optional>
#include <string_view>
#include <system_error>
#include <thread>

#include "kiln/core/error.h"

namespace kiln::distributed {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// A record is its kind, the key (a 4-byte length and the bytes) and, for kSet, the value (an
// 8-byte length and the bytes); lengths are little-endian.
enum class RecordKind : uint8_t { kSet = 'S', kDelete = 'D' };

// Keys the store keeps for itself; num_keys() leaves them out.
constexpr std::string_view kInternalKeyPrefix = "__kiln_file_store/";
const std::string kFinishedKey = std::string(kInternalKeyPrefix) + "finished_workers";
constexpr milliseconds kLongestPollInterval{10};

std::string error_text(int error) {
  return std::error_code(error, std::system_category()).message();
}

void put_little_endian(std::vector<uint8_t>& bytes, uint64_t value, int width) {
  for (int i = 0; i < width; ++i) bytes.push_back(static_cast<uint8_t>(value >> (8 * i)));
}

uint64_t read_little_endian(const uint8_t* data, int width) {
  uint64_t value = 0;
  for (int i = 0; i < width; ++i) value |= uint64_t{data[i]} << (8 * i);
  return value;
}

// Calls ready() with growing pauses until it returns true (then true) or timeout passes (false).
template <class Ready>
bool poll_until(milliseconds timeout, Ready&& ready) {
  constexpr milliseconds kLongestTimeout = std::chrono::hours(24 * 365 * 10);
  const auto deadline = Clock::now() + std::clamp(timeout, milliseconds(0), kLongestTimeout);
  auto pause = milliseconds(1);
  while (true) {
    if (ready()) return true;
    const auto now = Clock::now();
    if (now >= deadline) return false;
    std::this_thread::sleep_for(std::min<Clock::duration>(pause, deadline - now));
    pause = std::min(pause * 2, kLongestPollInterval);
  }
}

}  // namespace

// One call's hold on the store: the instance's mutex, flock on the file, and the records other
// processes appended since the last call read in.
class FileStore::Transaction {
 public:
  Transaction(FileStore& store, int lock_operation) : store_(store), guard_(store.mutex_) {
    while (::flock(store_.fd_, lock_operation) != 0) {
      KILN_CHECK(errno == EINTR, "FileStore: cannot lock \"", store_.path_,
                 "\": ", error_text(errno));
    }
    try {
      store_.read_new_records();
    } catch (...) {
      ::flock(store_.fd_, LOCK_UN);
      throw;
    }
  }
  ~Transaction() { ::flock(store_.fd_, LOCK_UN); }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

 private:
  FileStore& store_;
  std::lock_guard<std::mutex> guard_;
};

FileStore::FileStore(std::string path, int num_workers, milliseconds timeout)
    : Store(timeout), path_(std::move(path)), num_workers_(num_workers) {
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  KILN_CHECK(fd_ >= 0, "FileStore: cannot open \"", path_, "\": ", error_text(errno));
}

FileStore::~FileStore() {
  if (num_workers_ > 0) {
    try {
      Transaction transaction(*this, LOCK_EX);
      if (add_locked(kFinishedKey, 1) >= num_workers_) ::unlink(path_.c_str());
    } catch (const std::exception&) {
      // The file is left behind; nothing else depends on it.
    }
  }
  ::close(fd_);
}

void FileStore::read_new_records() {
  struct stat info {};
  KILN_CHECK(::fstat(fd_, &info) == 0, "FileStore: cannot stat \"", path_,
             "\": ", error_text(errno));
  const uint64_t size = info.st_size;
  if (size <= read_offset_) return;
  std::vector<uint8_t> tail(size - read_offset_);
  size_t filled = 0;
  while (filled < tail.size()) {
    const ssize_t got = ::pread(fd_, tail.data() + filled, tail.size() - filled,
                                static_cast<off_t>(read_offset_ + filled));
    if (got < 0 && errno == EINTR) continue;
    KILN_CHECK(got >= 0, "FileStore: cannot read \"", path_, "\": ", error_text(errno));
    if (got == 0) break;
    filled += got;
  }
  // Records are appended whole under the lock; a partial one at the end (a writer that died
  // mid-write) is left unread, and the next append drops it.
  size_t pos = 0;
  while (filled - pos >= 5) {
    const auto kind = static_cast<RecordKind>(tail[pos]);
    const size_t key_size = read_little_endian(&tail[pos + 1], 4);
    size_t end = pos + 5 + key_size;
    if (end > filled) break;
    std::string key(reinterpret_cast<const char*>(&tail[pos + 5]), key_size);
    if (kind == RecordKind::kDelete) {
      entries_.erase(key);
    } else {
      KILN_CHECK(kind == RecordKind::kSet, "FileStore: \"", path_,
                 "\" is not a store file (a record of kind ", static_cast<int>(kind), " at byte ",
                 read_offset_ + pos, ")");
      if (filled - end < 8) break;
      const uint64_t value_size = read_little_endian(&tail[end], 8);
      if (value_size > filled - end - 8) break;
      const uint8_t* value = &tail[end + 8];
      entries_[std::move(key)].assign(value, value + value_size);
      end += 8 + value_size;
    }
    pos = end;
  }
  read_offset_ += pos;
}

void FileStore::append(const std::vector<uint8_t>& record) {
  // Writers append whole records under LOCK_EX, which the caller holds and which has just read
  // every whole record: bytes past them are what a writer killed mid-write left. Appending after
  // them would make the next reader take them for the start of this record.
  struct stat info {};
  KILN_CHECK(::fstat(fd_, &info) == 0, "FileStore: cannot stat \"", path_,
             "\": ", error_text(errno));
  if (static_cast<uint64_t>(info.st_size) > read_offset_)
    KILN_CHECK(::ftruncate(fd_, static_cast<off_t>(read_offset_)) == 0,
               "FileStore: cannot drop the partial record at the end of \"", path_,
               "\": ", error_text(errno));
  size_t written = 0;
  while (written < record.size()) {
    const ssize_t wrote = ::write(fd_, record.data() + written, record.size() - written);
    if (wrote < 0 && errno == EINTR) continue;
    KILN_CHECK(wrote > 0, "FileStore: cannot write to \"", path_, "\": ", error_text(errno));
    written += wrote;
  }
  read_new_records();
}

void FileStore::append_set(const std::string& key, const std::vector<uint8_t>& value) {
  std::vector<uint8_t> record;
  record.reserve(13 + key.size() + value.size());
  record.push_back(static_cast<uint8_t>(RecordKind::kSet));
  put_little_endian(record, key.size(), 4);
  record.insert(record.end(), key.begin(), key.end());
  put_little_endian(record, value.size(), 8);
  record.insert(record.end(), value.begin(), value.end());
  append(record);
}

void FileStore::append_delete(const std::string& key) {
  std::vector<uint8_t> record;
  record.push_back(static_cast<uint8_t>(RecordKind::kDelete));
  put_little_endian(record, key.size(), 4);
  record.insert(record.end(), key.begin(), key.end());
  append(record);
}

void FileStore::set(const std::string& key, const std::vector<uint8_t>& value) {
  Transaction transaction(*this, LOCK_EX);
  append_set(key, value);
}

std::vector<uint8_t> FileStore::get(const std::string& key) {
  std::optional<std::vector<uint8_t>> value;
  const bool found = poll_until(timeout(), [&] {
    Transaction transaction(*this, LOCK_SH);
    const auto it = entries_.find(key);
    if (it != entries_.end()) value = it->second;
    return value.has_value();
  });
  KILN_CHECK(found, "FileStore::get: key \"", key, "\" was not set within ", timeout().count(),
             " ms (file ", path_, ")");
  return std::move(*value);
}

int64_t FileStore::add_locked(const std::string& key, int64_t amount) {
  int64_t value = 0;
  if (const auto it = entries_.find(key); it != entries_.end()) {
    const char* begin = reinterpret_cast<const char*>(it->second.data());
    const char* end = begin + it->second.size();
    const auto [parsed_end, error] = std::from_chars(begin, end, value);
    KILN_CHECK(error == std::errc() && parsed_end == end, "FileStore::add: key \"", key,
               "\" holds \"", std::string(begin, end),
               "\", which is not a counter (a decimal integer) (file ", path_, ")");
  }
  KILN_CHECK(!__builtin_add_overflow(value, amount, &value), "FileStore::add: adding ", amount,
             " to the counter at key \"", key, "\" overflows int64 (file ", path_, ")");
  const std::string text = std::to_string(value);
  append_set(key, std::vector<uint8_t>(text.begin(), text.end()));
  return value;
}

int64_t FileStore::add(const std::string& key, int64_t amount) {
  Transaction transaction(*this, LOCK_EX);
  return add_locked(key, amount);
}

std::vector<uint8_t> FileStore::compare_set(const std::string& key,
                                            const std::vector<uint8_t>& expected,
                                            const std::vector<uint8_t>& desired) {
  Transaction transaction(*this, LOCK_EX);
  const auto it = entries_.find(key);
  const bool swap = it == entries_.end() ? expected.empty() : it->second == expected;
  if (!swap) return it == entries_.end() ? std::vector<uint8_t>() : it->second;
  append_set(key, desired);
  return desired;
}

bool FileStore::delete_key(const std::string& key) {
  Transaction transaction(*this, LOCK_EX);
  if (!entries_.contains(key)) return false;
  append_delete(key);
  return true;
}

bool FileStore::check(const std::vector<std::string>& keys) {
  Transaction transaction(*this, LOCK_SH);
  return std::all_of(keys.begin(), keys.end(),
                     [&](const std::string& key) { return entries_.contains(key); });
}

void FileStore::wait(const std::vector<std::string>& keys, milliseconds timeout) {
  std::vector<std::string> missing;
  const bool found = poll_until(timeout, [&] {
    Transaction transaction(*this, LOCK_SH);
    missing.clear();
    for (const std::string& key : keys)
      if (!entries_.contains(key)) missing.push_back(key);
    return missing.empty();
  });
  KILN_CHECK(found, "FileStore::wait: ", missing.size() == 1 ? "key " : "keys ",
             quoted_keys(missing), missing.size() == 1 ? " was" : " were", " not set within ",
             timeout.count(), " ms (waited for ", quoted_keys(keys), "; file ", path_, ")");
}

int64_t FileStore::num_keys() {
  Transaction transaction(*this, LOCK_SH);
  return std::count_if(entries_.begin(), entries_.end(), [](const auto& entry) {
    return !entry.first.starts_with(kInternalKeyPrefix);
  });
}

}  // namespace kiln::distributed
