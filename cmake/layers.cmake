# The layers of src/ and what each may use: the one table the build links by (CMakeLists.txt
# links hd_<layer> to hd_<each layer it uses>) and cmake/check_layers.cmake checks the includes
# against. A folder may include its own headers, src/*.h (errors.h, the generated headers) and
# the headers of every layer it reaches through this table, directly or not; anything else is an
# include of a layer above it, which a static library does not always catch at link time
# (inline and header-only code links without the library).
#
# Lowest first; a layer may only use layers listed before it, so the graph has no cycles.
set(HD_LAYERS common engine analysis store run report demo kinds serve cli worker)
set(HD_LAYER_USES_common)                                        # files, hashes, UTF-8, exits
set(HD_LAYER_USES_engine common)                                 # the only one with llama.cpp
set(HD_LAYER_USES_analysis)                                      # pure math
set(HD_LAYER_USES_store analysis common)                         # the experiment file
set(HD_LAYER_USES_run analysis common engine store)              # the pipelines
set(HD_LAYER_USES_report analysis store)                         # rendering stored results
set(HD_LAYER_USES_demo analysis common engine)                   # the self-trained demo model
set(HD_LAYER_USES_kinds analysis common engine report run store)  # experiment kinds, registered
set(HD_LAYER_USES_serve common engine kinds report run)          # the web UI's server
set(HD_LAYER_USES_cli common demo engine kinds report run serve)  # the heterodyne command
set(HD_LAYER_USES_worker engine)                                 # heterodyne-worker

set(_seen)
foreach(_layer IN LISTS HD_LAYERS)
  foreach(_used IN LISTS HD_LAYER_USES_${_layer})
    if(NOT _used IN_LIST _seen)
      message(FATAL_ERROR "cmake/layers.cmake: ${_layer} uses ${_used}, which is not a layer "
                          "listed before it in HD_LAYERS")
    endif()
  endforeach()
  list(APPEND _seen ${_layer})
endforeach()

# Sets `out` to every layer `layer` reaches through the table (itself not included).
function(hd_layer_reach layer out)
  set(reach)
  set(todo ${HD_LAYER_USES_${layer}})
  while(todo)
    list(POP_FRONT todo next)
    if(NOT next IN_LIST reach)
      list(APPEND reach ${next})
      list(APPEND todo ${HD_LAYER_USES_${next}})
    endif()
  endwhile()
  list(SORT reach)
  set(${out} ${reach} PARENT_SCOPE)
endfunction()
