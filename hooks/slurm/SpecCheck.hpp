// What a user asked for with --colmet[=SPEC] (or SLURM_COLMET), and whether
// a SPEC is valid. The grammar is colmet-job's (src/spec/JobSpec.hpp).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace colmet::spank {

enum class Request {
    defaults,  // --colmet, --colmet=, --colmet=true: the site's metrics
    spec,      // --colmet=SPEC
    off,       // --colmet=off: do not sample this job (also in mode=all)
};

struct UserChoice {
    Request request = Request::defaults;
    std::string spec;  // for Request::spec
};

// Interpret an option value as Slurm hands it over. Slurm passes a bare
// --colmet as NULL, "" or "(null)" depending on the path it took (command
// line, environment, prolog environment); all three mean the defaults.
UserChoice interpret_option(const char *value);

// Why SPEC is not valid (a sentence), or nothing when it is. "off" is valid.
std::optional<std::string> spec_error(std::string_view spec);

// The spec to give colmet-job for a choice: the user's spec, or the site's
// default metrics (may be empty: colmet-node's own defaults).
std::string effective_spec(const UserChoice &choice, const std::string &site_metrics);

}  // namespace colmet::spank
