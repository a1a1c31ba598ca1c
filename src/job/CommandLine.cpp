#include "job/CommandLine.hpp"

#include "common/collectors.hpp"

#include <string>

namespace colmet::job {

const CLI::Validator &collector_list_check()
{
    static const CLI::Validator check(
        [](std::string &value) {
            auto list = parse_collector_list(value);
            return list ? std::string() : list.error().message();
        },
        "URI[,URI...]");
    return check;
}

void add_verbose_flag(CLI::App &command, int &verbosity)
{
    command.add_flag("-v,--verbose", verbosity, "More log output (-v info, -vv debug)");
}

}  // namespace colmet::job
