#pragma once

namespace colmet::job {

// The whole of colmet-job behind main(). Returns the exit status.
int job_main(int argc, char **argv);

}  // namespace colmet::job
