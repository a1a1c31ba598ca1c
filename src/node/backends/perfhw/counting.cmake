# colmet_perfhw: perf event counting in cgroup mode (PerfGroup) and the
# "perfhw" MetricBackend (the perf_event cgroups: src/cgroup/PerfEventHierarchy;
# event names: src/perf). Included from
# src/node/backends/perfhw/CMakeLists.txt (or src/node/backends/CMakeLists.txt);
# paths are relative to this file so the including directory does not matter.
set(_colmet_perfhw_dir ${CMAKE_CURRENT_LIST_DIR})
add_library(colmet_perfhw STATIC
  ${_colmet_perfhw_dir}/PerfGroup.cpp
  ${_colmet_perfhw_dir}/PerfhwBackend.cpp
  ${_colmet_perfhw_dir}/MappingFile.cpp)
target_include_directories(colmet_perfhw PUBLIC ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(colmet_perfhw PUBLIC colmet_cgroup colmet_common colmet_wire PRIVATE colmet_warnings)
# Event-name resolution (src/perf/PerfEventSpec.hpp's resolve_event).
target_link_libraries(colmet_perfhw PUBLIC colmet_perf_events)
unset(_colmet_perfhw_dir)
