// KernelCache: compiled kernels (object files) on disk, keyed by a content hash.
//
// The key (objects.h) is the SHA-256 of everything the machine code depends on: the kernel's
// LLVM IR before optimisation (with value names discarded, so it does not depend on node names),
// the target triple, CPU and features, the optimisation level, LLVM's version and the cache
// format version. An entry is the object file at <dir>/cpu-kernels/<key[0:2]>/<key>.o.
//
// Safe under concurrent use (threads of one compile, several tessel processes, several users of
// one directory): an entry is written to a temporary file in the same directory and renamed
// into place, so a reader sees either no entry or a whole one; two writers of one key write the
// same bytes and the last rename wins. A reader also checks that an entry parses as an object
// file defining the kernel's symbol (objects.cpp) and otherwise compiles the kernel again and
// replaces the entry. Nothing is ever deleted: the directory grows with the distinct kernels
// compiled (tens of KiB each; remove it to reclaim the space).
#pragma once

#include <optional>
#include <string>

namespace tessel::cpu_backend {

class KernelCache {
 public:
  /// A cache in `dir` (created with its parents on first store). `dir` empty: a disabled cache
  /// (load finds nothing, store does nothing).
  explicit KernelCache(std::string dir);

  bool enabled() const { return !dir_.empty(); }
  const std::string& dir() const { return dir_; }

  /// The bytes of entry `key` (64 hex digits), or nullopt when there is none.
  std::optional<std::string> load(const std::string& key) const;

  /// Writes entry `key` atomically (see the file comment). Throws tessel::Error naming the path
  /// when the directory cannot be created or the file cannot be written.
  void store(const std::string& key, const std::string& bytes) const;

  /// The path of entry `key`.
  std::string path_of(const std::string& key) const;

  /// The default directory: $TESSEL_CACHE_DIR when set (empty: no cache), else
  /// $XDG_CACHE_HOME/tessel, else $HOME/.cache/tessel, else "" (no cache). Throws tessel::Error
  /// naming TESSEL_CACHE_DIR when it is a relative path.
  static std::string default_dir();

 private:
  std::string dir_;
};

}  // namespace tessel::cpu_backend
