# colmet_plugin_library(NAME SOURCE...): a static library of code that is
# loaded into other programs (the Slurm SPANK plugin lives in srun, slurmd
# and slurmstepd): position-independent, hidden symbols, one section per
# function (the plugin links with --gc-sections), and never built with the
# sanitizers, whose run time those programs do not carry. The component that
# owns the sources declares it beside its ordinary library, from the same
# source list, so that nothing compiles another folder's files by path. The
# logic runs under the sanitizers through the ordinary library in the tests.
function(colmet_plugin_library name)
  add_library(${name} STATIC ${ARGN})
  # The target's options start as the directory's, which hold the
  # sanitizers' (COLMET_SANITIZE): start from none.
  set_property(TARGET ${name} PROPERTY COMPILE_OPTIONS "")
  set_target_properties(${name} PROPERTIES
    POSITION_INDEPENDENT_CODE ON
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  target_compile_options(${name} PRIVATE -ffunction-sections -fdata-sections -fstack-protector-strong)
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(${name} PRIVATE colmet_warnings)
endfunction()
