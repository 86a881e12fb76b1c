// The SQLite results store of a sweep (see store.h).
#include "compiler/dse/store.h"

#include <fmt/format.h>
#include <sqlite3.h>
#include <nlohmann/json.hpp>

#include <charconv>
#include <filesystem>

#include "compiler/support/error.h"

namespace tessel::dse {

namespace fs = std::filesystem;

namespace {

std::string quote_ident(const std::string& name) {
  std::string q = "\"";
  for (char c : name) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

/// A prepared statement, finalized on scope exit.
class Stmt {
 public:
  Stmt(sqlite3* db, const std::string& sql, const std::string& path) : db_(db), path_(path) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s_, nullptr) != SQLITE_OK)
      fail("{}: SQLite: {} (in: {})", path, sqlite3_errmsg(db), sql);
  }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  sqlite3_stmt* get() { return s_; }
  /// Steps once; true when a row is available, false when done.
  bool step() {
    const int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    fail("{}: SQLite: {}", path_, sqlite3_errmsg(db_));
  }
  void text(int i, const std::string& v) {
    sqlite3_bind_text(s_, i, v.c_str(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  void integer(int i, int64_t v) { sqlite3_bind_int64(s_, i, v); }
  void real(int i, double v) { sqlite3_bind_double(s_, i, v); }
  void null(int i) { sqlite3_bind_null(s_, i); }
  /// An integer when the text is one, a number when it is one, else text.
  void value(int i, const std::string& v) {
    const char* b = v.data();
    const char* e = v.data() + v.size();
    int64_t n = 0;
    double d = 0;
    if (auto [end, ec] = std::from_chars(b, e, n); ec == std::errc() && end == e && !v.empty())
      integer(i, n);
    else if (auto [end2, ec2] = std::from_chars(b, e, d);
             ec2 == std::errc() && end2 == e && !v.empty())
      real(i, d);
    else
      text(i, v);
  }
  std::string column_text(int i) {
    switch (sqlite3_column_type(s_, i)) {
      case SQLITE_NULL:
        return "";
      case SQLITE_INTEGER:
        return std::to_string(sqlite3_column_int64(s_, i));
      case SQLITE_FLOAT:
        return fmt::format("{}", sqlite3_column_double(s_, i));
      default: {
        const auto* t = sqlite3_column_text(s_, i);
        return t ? reinterpret_cast<const char*>(t) : "";
      }
    }
  }
  std::optional<int64_t> column_int(int i) {
    if (sqlite3_column_type(s_, i) == SQLITE_NULL) return std::nullopt;
    return sqlite3_column_int64(s_, i);
  }
  std::optional<double> column_real(int i) {
    if (sqlite3_column_type(s_, i) == SQLITE_NULL) return std::nullopt;
    return sqlite3_column_double(s_, i);
  }

 private:
  sqlite3* db_;
  std::string path_;
  sqlite3_stmt* s_ = nullptr;
};

void exec(sqlite3* db, const std::string& sql, const std::string& path) {
  char* msg = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &msg) != SQLITE_OK) {
    const std::string m = msg ? msg : sqlite3_errmsg(db);
    sqlite3_free(msg);
    fail("{}: SQLite: {}", path, m);
  }
}

sqlite3* open_db(const std::string& path, int flags) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, flags, nullptr) != SQLITE_OK) {
    const std::string m = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    fail("{}: cannot open the results database: {}", path, m);
  }
  sqlite3_busy_timeout(db, 10000);
  return db;
}

const char* kFixedColumns[] = {
    "status",     "reason",     "total_cycles",  "area_mm2",       "energy_uj",
    "edp",        "efficiency", "bound",         "bound_shares",   "detail",
    "dram_bytes", "config",     "config_sha256", "tessel_version", "seconds"};

std::string meta_value(sqlite3* db, const std::string& path, const std::string& key) {
  Stmt s(db, "SELECT value FROM meta WHERE key = ?", path);
  s.text(1, key);
  if (!s.step()) fail("{}: not a tessel sweep database (no '{}' in its meta table)", path, key);
  return s.column_text(0);
}

}  // namespace

ResultStore::ResultStore(sqlite3* db, std::string path, std::vector<std::string> keys)
    : db_(db), path_(std::move(path)), keys_(std::move(keys)) {}

ResultStore::~ResultStore() {
  if (db_) sqlite3_close(db_);
}

ResultStore::ResultStore(ResultStore&& o) noexcept
    : db_(o.db_), path_(std::move(o.path_)), keys_(std::move(o.keys_)) {
  o.db_ = nullptr;
}

ResultStore ResultStore::create(const std::string& path, const std::vector<std::string>& keys,
                                const std::string& experiment, const std::string& tessel_version) {
  if (fs::exists(path))
    fail("{} exists already (a sweep ran there): continue it with --resume, or give another --out",
         path);
  sqlite3* db = open_db(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  ResultStore store(db, path, keys);
  std::string cols =
      "point INTEGER NOT NULL, workload TEXT NOT NULL, workload_index INTEGER NOT NULL";
  for (const auto& k : keys) cols += ", " + quote_ident(k);
  cols +=
      ", status TEXT NOT NULL, reason TEXT NOT NULL, total_cycles INTEGER, area_mm2 REAL, "
      "energy_uj REAL, edp REAL, efficiency REAL, bound TEXT NOT NULL, bound_shares TEXT NOT NULL, "
      "detail TEXT NOT NULL, dram_bytes INTEGER, config TEXT NOT NULL, config_sha256 TEXT NOT "
      "NULL, tessel_version TEXT "
      "NOT NULL, seconds REAL NOT NULL, PRIMARY KEY (point, workload_index)";
  exec(db, "BEGIN", path);
  exec(db, "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)", path);
  exec(db, "CREATE TABLE results (" + cols + ")", path);
  const std::pair<const char*, std::string> meta[] = {{"experiment", experiment},
                                                      {"keys", nlohmann::json(keys).dump()},
                                                      {"tessel_version", tessel_version}};
  for (const auto& [k, v] : meta) {
    Stmt s(db, "INSERT INTO meta (key, value) VALUES (?, ?)", path);
    s.text(1, k);
    s.text(2, v);
    s.step();
  }
  exec(db, "COMMIT", path);
  return store;
}

ResultStore ResultStore::open(const std::string& path) {
  if (!fs::is_regular_file(path)) fail("{} does not exist (no sweep ran there)", path);
  sqlite3* db = open_db(path, SQLITE_OPEN_READWRITE);
  ResultStore store(db, path, {});
  {
    Stmt s(db, "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'meta'", path);
    if (!s.step()) fail("{} is not a tessel sweep database (no meta table)", path);
  }
  try {
    store.keys_ =
        nlohmann::json::parse(meta_value(db, path, "keys")).get<std::vector<std::string>>();
  } catch (const nlohmann::json::exception&) {
    fail("{}: not a tessel sweep database (its meta 'keys' is not a list of names)", path);
  }
  return store;
}

ResultStore ResultStore::resume(const std::string& path, const std::vector<std::string>& keys,
                                const std::string& experiment) {
  if (!fs::is_regular_file(path))
    fail("--resume: {} does not exist (no sweep to continue; run without --resume to start one)",
         path);
  ResultStore store = open(path);
  sqlite3* db = store.db_;
  const std::string stored = meta_value(db, path, "experiment");
  if (stored != experiment) {
    // Name the first top-level entry that differs.
    std::string what = "its canonical form";
    try {
      const auto a = nlohmann::json::parse(stored), b = nlohmann::json::parse(experiment);
      for (const auto& [k, v] : b.items())
        if (!a.contains(k) || a.at(k) != v) {
          what = fmt::format("'{}': stored {}, now {}", k, a.contains(k) ? a.at(k).dump() : "none",
                             v.dump());
          break;
        }
    } catch (const nlohmann::json::exception&) {
    }
    if (what.size() > 400) what = what.substr(0, 400) + "...";
    fail(
        "--resume: {} holds a different sweep than this experiment ({}); resume it with the "
        "experiment that made it, or give another --out",
        path, what);
  }
  TESSEL_CHECK(store.keys_ == keys, "same experiment, different keys");
  return store;
}

std::set<std::pair<int64_t, int64_t>> ResultStore::done() const {
  std::set<std::pair<int64_t, int64_t>> d;
  Stmt s(db_, "SELECT point, workload_index FROM results", path_);
  while (s.step()) d.emplace(*s.column_int(0), *s.column_int(1));
  return d;
}

void ResultStore::insert(const Row& r) {
  TESSEL_CHECK(r.values.size() == keys_.size(), "row of {} values for {} keys", r.values.size(),
               keys_.size());
  std::string cols = "point, workload, workload_index", marks = "?, ?, ?";
  for (const auto& k : keys_) {
    cols += ", " + quote_ident(k);
    marks += ", ?";
  }
  for (const char* c : kFixedColumns) {
    cols += std::string(", ") + c;
    marks += ", ?";
  }
  exec(db_, "BEGIN IMMEDIATE", path_);
  try {
    Stmt s(db_, "INSERT INTO results (" + cols + ") VALUES (" + marks + ")", path_);
    int i = 1;
    s.integer(i++, r.point);
    s.text(i++, r.workload);
    s.integer(i++, r.workload_index);
    for (const auto& v : r.values) s.value(i++, v);
    s.text(i++, r.status);
    s.text(i++, r.reason);
    auto opt_int = [&](const std::optional<int64_t>& v) { v ? s.integer(i++, *v) : s.null(i++); };
    auto opt_real = [&](const std::optional<double>& v) { v ? s.real(i++, *v) : s.null(i++); };
    opt_int(r.total_cycles);
    opt_real(r.area_mm2);
    opt_real(r.energy_uj);
    opt_real(r.edp);
    opt_real(r.efficiency);
    s.text(i++, r.bound);
    s.text(i++, r.bound_shares);
    s.text(i++, r.detail);
    opt_int(r.dram_bytes);
    s.text(i++, r.config);
    s.text(i++, r.config_sha256);
    s.text(i++, r.tessel_version);
    s.real(i++, r.seconds);
    s.step();
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
  exec(db_, "COMMIT", path_);
}

std::vector<Row> ResultStore::rows() const {
  std::string cols = "point, workload, workload_index";
  for (const auto& k : keys_) cols += ", " + quote_ident(k);
  for (const char* c : kFixedColumns) cols += std::string(", ") + c;
  Stmt s(db_, "SELECT " + cols + " FROM results ORDER BY point, workload_index", path_);
  std::vector<Row> rows;
  while (s.step()) {
    Row r;
    int i = 0;
    r.point = *s.column_int(i++);
    r.workload = s.column_text(i++);
    r.workload_index = *s.column_int(i++);
    for (size_t k = 0; k < keys_.size(); ++k) r.values.push_back(s.column_text(i++));
    r.status = s.column_text(i++);
    r.reason = s.column_text(i++);
    r.total_cycles = s.column_int(i++);
    r.area_mm2 = s.column_real(i++);
    r.energy_uj = s.column_real(i++);
    r.edp = s.column_real(i++);
    r.efficiency = s.column_real(i++);
    r.bound = s.column_text(i++);
    r.bound_shares = s.column_text(i++);
    r.detail = s.column_text(i++);
    r.dram_bytes = s.column_int(i++);
    r.config = s.column_text(i++);
    r.config_sha256 = s.column_text(i++);
    r.tessel_version = s.column_text(i++);
    r.seconds = s.column_real(i++).value_or(0);
    rows.push_back(std::move(r));
  }
  return rows;
}

void ResultStore::insert_screen(const std::vector<ScreenRow>& rows) {
  if (screen_count() > 0) fail("{}: the screened rows are stored already", path_);
  std::string cols =
      "point INTEGER NOT NULL, workload TEXT NOT NULL, workload_index INTEGER NOT NULL";
  std::string names = "point, workload, workload_index", marks = "?, ?, ?";
  for (const auto& k : keys_) {
    cols += ", " + quote_ident(k);
    names += ", " + quote_ident(k);
    marks += ", ?";
  }
  cols +=
      ", status TEXT NOT NULL, reason TEXT NOT NULL, estimated_cycles REAL, simulated INTEGER NOT "
      "NULL, PRIMARY KEY (point, workload_index)";
  names += ", status, reason, estimated_cycles, simulated";
  marks += ", ?, ?, ?, ?";
  exec(db_, "BEGIN IMMEDIATE", path_);
  try {
    exec(db_, "CREATE TABLE IF NOT EXISTS screen (" + cols + ")", path_);
    Stmt s(db_, "INSERT INTO screen (" + names + ") VALUES (" + marks + ")", path_);
    for (const ScreenRow& r : rows) {
      TESSEL_CHECK(r.values.size() == keys_.size(), "screen row of {} values for {} keys",
                   r.values.size(), keys_.size());
      sqlite3_reset(s.get());
      int i = 1;
      s.integer(i++, r.point);
      s.text(i++, r.workload);
      s.integer(i++, r.workload_index);
      for (const auto& v : r.values) s.value(i++, v);
      s.text(i++, r.status);
      s.text(i++, r.reason);
      r.estimated_cycles ? s.real(i++, *r.estimated_cycles) : s.null(i++);
      s.integer(i++, r.simulated ? 1 : 0);
      s.step();
    }
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
  exec(db_, "COMMIT", path_);
}

int64_t ResultStore::screen_count() const {
  {
    Stmt t(db_, "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'screen'", path_);
    if (!t.step()) return 0;
  }
  Stmt s(db_, "SELECT COUNT(*) FROM screen", path_);
  s.step();
  return s.column_int(0).value_or(0);
}

std::vector<ScreenRow> ResultStore::screen_rows(int64_t point) const {
  std::vector<ScreenRow> out;
  if (screen_count() == 0) return out;
  std::string cols = "point, workload, workload_index";
  for (const auto& k : keys_) cols += ", " + quote_ident(k);
  cols += ", status, reason, estimated_cycles, simulated";
  Stmt s(db_, "SELECT " + cols + " FROM screen WHERE point = ? ORDER BY workload_index", path_);
  s.integer(1, point);
  while (s.step()) {
    ScreenRow r;
    int i = 0;
    r.point = *s.column_int(i++);
    r.workload = s.column_text(i++);
    r.workload_index = *s.column_int(i++);
    for (size_t k = 0; k < keys_.size(); ++k) r.values.push_back(s.column_text(i++));
    r.status = s.column_text(i++);
    r.reason = s.column_text(i++);
    r.estimated_cycles = s.column_real(i++);
    r.simulated = s.column_int(i++).value_or(0) != 0;
    out.push_back(std::move(r));
  }
  return out;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

}  // namespace tessel::dse
