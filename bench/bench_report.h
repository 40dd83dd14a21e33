// Shared pieces of `tandem bench` commands: statistics over repetitions, the machine description,
// a printed table and the JSON report.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace tandem::bench {

double median(std::vector<double> v);

// "a,b,,c" -> {"a", "b", "c"}: the comma-separated lists of bench flags.
std::vector<std::string> split_list(const std::string& s);

// One measured configuration: `items` processed per repetition, seconds per repetition.
struct Row {
  std::string name;
  std::string note;
  double items = 0;
  std::vector<double> seconds;
  double median_rate() const { return items / median(seconds); }
};

// {"cpu_model", "logical_cpus", ..., "gpu": {...} or null}
nlohmann::json machine_json();

// Prints rows as a table of median rate, time per item and ratio to `baseline` (a row name).
void print_table(const std::string& title, const std::string& unit, const std::vector<Row>& rows,
                 const std::string& baseline);

nlohmann::json rows_json(const std::vector<Row>& rows);

// Writes `report` to `path` (creating parent directories); throws std::runtime_error on failure.
void write_json(const std::string& path, const nlohmann::json& report);

}  // namespace tandem::bench
