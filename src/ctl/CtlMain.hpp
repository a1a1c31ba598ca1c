#pragma once

namespace colmet::ctl {

// The whole of colmet-ctl behind main(): parse options, ask the job's
// sampler, print its answer. Returns the exit status:
//   0 accepted, 1 rejected by the sampler, 64 usage error,
//   69 the sampler cannot be reached (no such job here, nobody listening, no
//      answer within --timeout), 77 permission denied, 70 internal error.
int ctl_main(int argc, char **argv);

}  // namespace colmet::ctl
