// colmet-keygen: make the CURVE key pair of a node or of the collector.
#pragma once

namespace colmet::keygen {

int keygen_main(int argc, char **argv);

}  // namespace colmet::keygen
