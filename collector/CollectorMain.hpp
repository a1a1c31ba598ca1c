#pragma once

namespace colmet::collector {

// The whole of colmet-collector behind main(). Returns the exit status.
int collector_main(int argc, char **argv);

}  // namespace colmet::collector
