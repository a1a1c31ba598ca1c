#include "keygen/KeygenMain.hpp"

int main(int argc, char **argv) { return colmet::keygen::keygen_main(argc, argv); }
