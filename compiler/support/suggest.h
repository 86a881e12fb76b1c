// "Did you mean ...?" for misspelt names (config keys, experiment keys): the closest candidate by
// Levenshtein distance, offered only when it is a close misspelling.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

namespace tessel {

/// Levenshtein distance between `a` and `b` (insertions, deletions, substitutions).
inline size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

/// " (did you mean 'X'?)" for the candidate closest to `name` when it is at most 2 edits away
/// (the first such candidate on a tie), else "".
template <class Names>
std::string did_you_mean(const std::string& name, const Names& candidates) {
  std::string best;
  size_t best_distance = 3;  // suggest only close misspellings
  for (const auto& c : candidates) {
    const size_t d = edit_distance(name, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  return best.empty() ? "" : " (did you mean '" + best + "'?)";
}

}  // namespace tessel
