// Links the time-series sink (TsdbSink::make) and nothing else of the
// collector, for summary_users_link_no_hdf5: ldd of this program shows what
// the sink needs. Run, it builds a sink that sends to nowhere and exits.
#include "collector/sinks/tsdb/TsdbSink.hpp"

int main()
{
    auto sink = colmet::collector::tsdb::TsdbSink::with_submit({}, [](const std::string &, uint64_t, uint64_t) {
        return std::optional<colmet::collector::tsdb::BatchFate>();
    });
    return sink ? 0 : 1;
}
