// Which collector a job's samples go to, when several are configured.
//
// A `zeromq-uri` setting (colmet-node, colmet-job, colmet.conf, the SPANK
// plugin's collector=) may list collectors separated by commas:
//
//   tcp://coll-a:5556,tcp://coll-b:5556
//
// Every sampler of a job picks the same one by rendezvous hashing of the job
// id: each address gets the score mix(FNV-1a(address "\n" job id)) and the
// highest score wins. So the choice depends only on the job id and the set of
// addresses, not on their order, and adding or removing one collector moves
// only the jobs that go to it. Nodes must therefore list the same addresses,
// spelt the same way (tcp://10.0.0.5:5556 and tcp://coll-a:5556 are two
// different collectors to this rule).
#pragma once

#include "common/result.hpp"

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace colmet {

inline constexpr size_t k_max_collectors = 64;

// The addresses of a comma-separated list, blanks around them removed (a
// newline separates them too: CLI11 joins a list from colmet.conf so). Each
// must be a ZeroMQ endpoint (scheme "://" address, no blank or comma inside);
// at least one, at most k_max_collectors, no address twice.
Result<std::vector<std::string>> parse_collector_list(std::string_view text);

// The index in `collectors` (not empty) of the job's collector.
size_t collector_index(const std::vector<std::string> &collectors, std::string_view job_id);

// Acknowledgements (docs/protocol.md, "Acknowledged delivery") travel on a
// second endpoint beside each collector's data endpoint. Unless configured,
// both sides derive it by one rule: tcp://host:PORT -> tcp://host:PORT+1,
// ipc://PATH -> ipc://PATH.ack, inproc://NAME -> inproc://NAME.ack. An error
// for a port that has no successor (65535, a wildcard or a name).
Result<std::string> ack_endpoint_of(std::string_view data_uri);

// The word that turns acknowledged delivery off where an ack endpoint is
// configured ("ack-uri = none").
inline constexpr std::string_view k_no_ack_endpoint = "none";

}  // namespace colmet
