#include "tools/kiln/fr.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "kiln/io/json_cursor.h"
#include "kiln/io/reporter.h"

namespace kiln::cli {
namespace {

namespace fs = std::filesystem;
using io::detail::JsonCursor;

struct Entry {
  std::string group, op, state, error;
  std::string tensors;    // input sizes and dtypes as text
  std::string signature;  // op and tensors
  int group_rank = 0, group_size = 1;
  int64_t seq = 0, p2p_seq = 0;
};

struct Dump {
  std::string file, reason;
  int rank = -1, world_size = -1;
  std::vector<Entry> entries;
};

int64_t integer(JsonCursor& c, std::string_view what) {
  const io::detail::JsonNumber n = c.number(what);
  return std::stoll(std::string(n.text));
}

// A JSON array of arrays of integers, or of strings, as compact text.
std::string array_text(JsonCursor& c, std::string_view what) {
  std::string out = "[";
  c.expect('[', what);
  for (bool first = true; !c.consume(']'); first = false) {
    if (!first) {
      c.expect(',', what);
      out += ", ";
    }
    if (c.peek() == '"') {
      out += c.string(what);
    } else if (c.peek() == '[') {
      out += array_text(c, what);
    } else {
      out += std::to_string(integer(c, what));
    }
  }
  return out + "]";
}

Entry read_entry(JsonCursor& c) {
  Entry e;
  std::string sizes, dtypes;
  c.expect('{', "for an entry");
  for (bool first = true; !c.consume('}'); first = false) {
    if (!first) c.expect(',', "between an entry's fields");
    const std::string key = c.string("for a field name");
    c.expect(':', "after a field name");
    if (key == "group")
      e.group = c.string(key);
    else if (key == "op")
      e.op = c.string(key);
    else if (key == "state")
      e.state = c.string(key);
    else if (key == "error")
      e.error = c.string(key);
    else if (key == "group_rank")
      e.group_rank = static_cast<int>(integer(c, key));
    else if (key == "group_size")
      e.group_size = static_cast<int>(integer(c, key));
    else if (key == "collective_seq_id")
      e.seq = integer(c, key);
    else if (key == "p2p_seq_id")
      e.p2p_seq = integer(c, key);
    else if (key == "input_sizes")
      sizes = array_text(c, key);
    else if (key == "input_dtypes")
      dtypes = array_text(c, key);
    else
      c.skip_value(2);
  }
  e.tensors = sizes + " " + dtypes;
  e.signature = e.op + " " + e.tensors;
  return e;
}

Dump read_dump(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  const std::string s = text.str();
  io::detail::Reporter r("kiln fr: '" + path.string() + "': ");
  JsonCursor c(s, r, 8);
  Dump d;
  d.file = path.filename().string();
  c.expect('{', "at the start");
  for (bool first = true; !c.consume('}'); first = false) {
    if (!first) c.expect(',', "between fields");
    const std::string key = c.string("for a field name");
    c.expect(':', "after a field name");
    if (key == "rank") {
      d.rank = static_cast<int>(integer(c, key));
    } else if (key == "world_size") {
      d.world_size = static_cast<int>(integer(c, key));
    } else if (key == "version") {
      const int64_t v = integer(c, key);
      if (v != 1) r.fail("version ", v, " is not supported (this kiln reads version 1)");
    } else if (key == "reason") {
      d.reason = c.string(key);
    } else if (key == "entries") {
      c.expect('[', "for entries");
      for (bool first_entry = true; !c.consume(']'); first_entry = false) {
        if (!first_entry) c.expect(',', "between entries");
        d.entries.push_back(read_entry(c));
      }
    } else {
      c.skip_value(1);
    }
  }
  return d;
}

std::string list(const std::set<int>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return out;
}

std::string describe(const Entry& e) {
  std::string s = "#" + std::to_string(e.seq) + " " + e.signature + " " + e.state;
  if (!e.error.empty()) s += " (" + e.error.substr(0, 160) + ")";
  return s;
}

// One group's collectives, by group rank and sequence number, and its point-to-point calls by
// group rank, in call order.
struct GroupView {
  int size = 1;
  std::map<int, std::map<int64_t, const Entry*>> by_rank;
  std::map<int, std::vector<const Entry*>> p2p;
  std::map<int, int> global_rank;  // group rank -> the global rank of its dump
};

// Finds the first collective where the group's ranks part ways; returns the culprits' group
// ranks (empty when none) after printing what happened.
std::set<int> first_divergence(const std::string& name, const GroupView& g) {
  std::set<int> present, absent;
  for (const auto& [rank, entries] : g.by_rank) present.insert(rank);
  for (int r = 0; r < g.size; ++r)
    if (!present.count(r)) absent.insert(r);
  int64_t first = 0, last = -1;
  for (const auto& [rank, entries] : g.by_rank) {
    first = std::max(first, entries.begin()->first);  // older entries may be overwritten
    last = std::max(last, entries.rbegin()->first);
  }
  const std::string where = "group '" + name + "'";
  for (int64_t s = first; s <= last; ++s) {
    std::set<int> lacking;
    std::map<std::string, std::set<int>> by_signature;
    std::map<int, const Entry*> at;
    for (const auto& [rank, entries] : g.by_rank) {
      const auto it = entries.find(s);
      if (it == entries.end()) {
        lacking.insert(rank);
      } else {
        at[rank] = it->second;
        by_signature[it->second->signature].insert(rank);
      }
    }
    if (!lacking.empty()) {
      std::set<int> holders;
      for (const auto& [rank, e] : at) holders.insert(rank);
      std::cout << where << ", collective #" << s << ": rank(s) " << list(holders) << " called "
                << at.begin()->second->signature << "; rank(s) " << list(lacking)
                << " never did:\n";
      for (int r : lacking)
        std::cout << "  rank " << r << "'s last: " << describe(*g.by_rank.at(r).rbegin()->second)
                  << "\n";
      lacking.insert(absent.begin(), absent.end());
      return lacking;
    }
    if (by_signature.size() > 1) {
      std::cout << where << ", collective #" << s << ": the ranks called different collectives:\n";
      size_t most = 0;
      for (const auto& [sig, ranks] : by_signature) most = std::max(most, ranks.size());
      std::set<int> culprits;
      for (const auto& [sig, ranks] : by_signature) {
        std::cout << "  rank(s) " << list(ranks) << ": " << sig << "\n";
        if (ranks.size() < most || by_signature.size() == static_cast<size_t>(g.size))
          culprits.insert(ranks.begin(), ranks.end());
      }
      return culprits;
    }
    std::set<int> unfinished;
    for (const auto& [rank, e] : at)
      if (e->state != "completed") unfinished.insert(rank);
    if (!unfinished.empty()) {
      std::cout << where << ", collective #" << s << " (" << at.begin()->second->signature
                << ") did not complete on rank(s) " << list(unfinished) << ":\n";
      for (int r : unfinished) std::cout << "  rank " << r << ": " << describe(*at.at(r)) << "\n";
      if (!absent.empty()) {
        std::cout << "  rank(s) " << list(absent)
                  << " left no dump: they died or were killed, and the others waited for them\n";
        return absent;
      }
      std::set<int> culprits;
      for (const auto& [rank, e] : at)
        if (e->state == "scheduled") culprits.insert(rank);
      return culprits.empty() ? unfinished : culprits;
    }
  }
  if (!absent.empty()) {
    std::cout << where << ": the dumped ranks agree up to collective #" << last << "; rank(s) "
              << list(absent) << " left no dump (they died, were killed, or could not write)\n";
    return absent;
  }
  std::cout << where << ": all " << g.size << " ranks completed collectives #" << first << " to #"
            << last << " alike\n";
  return {};
}

// The peer in a point-to-point op's name ("send to rank 3" with prefix "send to rank "), or -1.
int peer_of(const std::string& op, const std::string& prefix) {
  if (op.rfind(prefix, 0) != 0) return -1;
  try {
    return std::stoi(op.substr(prefix.size()));
  } catch (const std::exception&) {
    return -1;
  }
}

// Pairs the k-th send from rank a to rank b with the k-th recv on b from a, for every pair of
// dumped ranks; reports different tensors and calls left waiting for a peer that never made
// its half. Returns the culprits' group ranks.
std::set<int> unmatched_point_to_point(const std::string& name, const GroupView& g) {
  std::set<int> culprits;
  for (const auto& [a, from_a] : g.p2p)
    for (const auto& [b, on_b] : g.p2p) {
      if (a == b) continue;
      std::vector<const Entry*> sends, recvs;
      for (const Entry* e : from_a)
        if (peer_of(e->op, "send to rank ") == b) sends.push_back(e);
      for (const Entry* e : on_b)
        if (peer_of(e->op, "recv from rank ") == a) recvs.push_back(e);
      const std::string where = "group '" + name + "', messages from rank " + std::to_string(a) +
                                " to rank " + std::to_string(b);
      for (size_t k = 0; k < std::min(sends.size(), recvs.size()); ++k)
        if (sends[k]->tensors != recvs[k]->tensors) {
          std::cout << where << ": send " << k + 1 << " is " << sends[k]->tensors
                    << " but the matching recv expects " << recvs[k]->tensors << "\n";
          culprits.insert({a, b});
        }
      for (size_t k = recvs.size(); k < sends.size(); ++k)
        if (sends[k]->state != "completed") {
          std::cout << where << ": rank " << a << "'s send " << k + 1 << " (" << sends[k]->tensors
                    << ") is " << sends[k]->state << "; rank " << b
                    << " never posted the matching recv\n";
          culprits.insert(b);
        }
      for (size_t k = sends.size(); k < recvs.size(); ++k)
        if (recvs[k]->state != "completed") {
          std::cout << where << ": rank " << b << "'s recv " << k + 1 << " (" << recvs[k]->tensors
                    << ") is " << recvs[k]->state << "; rank " << a << " never sent it\n";
          culprits.insert(a);
        }
    }
  return culprits;
}

}  // namespace

int fr(int argc, char** argv) {
  if (argc != 1 || std::string(argv[0]) == "-h" || std::string(argv[0]) == "--help") {
    std::cerr << "usage: kiln fr DIR\n"
                 "Reads the flight-recorder dumps kiln_fr_rank*.json in DIR, lines up each "
                 "group's collectives across the ranks\nand reports the first place they part "
                 "ways, naming the culprit ranks (exit status 1 when it finds one).\n";
    return 2;
  }
  std::vector<Dump> dumps;
  try {
    std::vector<fs::path> files;
    for (const auto& item : fs::directory_iterator(argv[0])) {
      const std::string n = item.path().filename().string();
      if (n.rfind("kiln_fr_rank", 0) == 0 && item.path().extension() == ".json")
        files.push_back(item.path());
    }
    std::sort(files.begin(), files.end());
    for (const fs::path& f : files) dumps.push_back(read_dump(f));
  } catch (const std::exception& e) {
    std::cerr << "kiln fr: " << e.what() << "\n";
    return 2;
  }
  if (dumps.empty()) {
    std::cerr << "kiln fr: no flight recorder dumps (kiln_fr_rank*.json) in " << argv[0] << "\n";
    return 2;
  }
  int world = 0;
  std::set<int> dumped;
  std::map<std::string, GroupView> groups;
  for (const Dump& d : dumps) {
    world = std::max(world, d.world_size);
    dumped.insert(d.rank);
    std::cout << "rank " << d.rank << " (" << d.file << "): " << d.entries.size()
              << " entries, written because: " << d.reason.substr(0, 200) << "\n";
    for (const Entry& e : d.entries) {
      GroupView& g = groups[e.group];
      g.size = std::max(g.size, e.group_size);
      g.global_rank[e.group_rank] = d.rank;
      if (e.p2p_seq != 0)
        g.p2p[e.group_rank].push_back(&e);
      else
        g.by_rank[e.group_rank][e.seq] = &e;
    }
  }
  std::set<int> missing;
  for (int r = 0; r < world; ++r)
    if (!dumped.count(r)) missing.insert(r);
  if (!missing.empty()) std::cout << "no dump from rank(s) " << list(missing) << "\n";

  std::set<std::string> culprits;
  for (const auto& [name, g] : groups) {
    std::set<int> ranks = first_divergence(name, g);
    const std::set<int> p2p = unmatched_point_to_point(name, g);
    ranks.insert(p2p.begin(), p2p.end());
    for (int r : ranks) {
      const auto it = g.global_rank.find(r);
      if (it != g.global_rank.end() || name == "default")
        culprits.insert("rank " + std::to_string(it != g.global_rank.end() ? it->second : r));
      else
        culprits.insert("rank " + std::to_string(r) + " of group '" + name + "'");
    }
  }
  for (int r : missing) culprits.insert("rank " + std::to_string(r));
  if (culprits.empty()) {
    std::cout << "no divergence found\n";
    return 0;
  }
  std::string names;
  for (const std::string& c : culprits) names += (names.empty() ? "" : ", ") + c;
  std::cout << "culprit: " << names << "\n";
  return 1;
}

}  // namespace kiln::cli
