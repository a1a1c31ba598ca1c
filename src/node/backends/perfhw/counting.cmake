# colmet_perfhw: perf event counting in cgroup mode (PerfGroup), the perf_event
# cgroup set-up (perf_mount) and the "perfhw" MetricBackend. Included from
# src/node/backends/perfhw/CMakeLists.txt (or src/node/backends/CMakeLists.txt);
# paths are relative to this file so the including directory does not matter.
set(_colmet_perfhw_dir ${CMAKE_CURRENT_LIST_DIR})
add_library(colmet_perfhw STATIC
  ${_colmet_perfhw_dir}/perf_mount.cpp
  ${_colmet_perfhw_dir}/PerfGroup.cpp
  ${_colmet_perfhw_dir}/PerfhwBackend.cpp
  ${_colmet_perfhw_dir}/MappingFile.cpp)
target_include_directories(colmet_perfhw PUBLIC ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(colmet_perfhw PUBLIC colmet_cgroup colmet_common colmet_wire PRIVATE colmet_warnings)
# Event-name resolution (PerfEventSpec.hpp's resolve_event) when it is built;
# checked at generate time, so the include order does not matter.
target_link_libraries(colmet_perfhw PUBLIC $<TARGET_NAME_IF_EXISTS:colmet_perfhw_events>)
unset(_colmet_perfhw_dir)
