# Fails, naming file:line, when a file under src/<layer>/ includes a header of a layer that the
# table in cmake/layers.cmake does not let it reach (an include of a layer above it), or when
# src/ holds a folder the table does not name.
#   cmake -DSRC=<a src/ folder> -P cmake/check_layers.cmake
# The build runs it on src/ (target hd_layers); tests/CMakeLists.txt also runs it on made-up
# trees that must pass and fail (tests/layers_check_test.cmake).
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/layers.cmake)
if(NOT SRC OR NOT IS_DIRECTORY "${SRC}")
  message(FATAL_ERROR "check_layers.cmake: -DSRC=<a src/ folder> is missing or not a folder")
endif()
get_filename_component(_root "${SRC}/.." ABSOLUTE)

# `#include "x/..."` or `#include <x/...>`: group 1 is x.
set(_include_re "^[ \t]*#[ \t]*include[ \t]*[\"<]([A-Za-z0-9_]+)/")

# Appends to `problems` (in the caller) one "file:line: ..." per include in `file` of a layer
# that `layer` may not use. Only called for a file already known to hold one: it reads the file
# line by line to name the line.
function(hd_report_file file layer reach)
  file(READ ${file} text)
  # One list element per line: characters that a CMake list would read as structure go first.
  string(REPLACE "\\" "/" text "${text}")
  string(REPLACE ";" "," text "${text}")
  string(REPLACE "[" "(" text "${text}")
  string(REPLACE "]" ")" text "${text}")
  string(REPLACE "\n" ";" lines "${text}")
  file(RELATIVE_PATH rel ${_root} ${file})
  if(reach)
    list(JOIN reach ", " may)
  else()
    set(may "nothing of the other layers")
  endif()
  set(n 0)
  foreach(line IN LISTS lines)
    math(EXPR n "${n} + 1")
    if(line MATCHES "${_include_re}")
      set(used ${CMAKE_MATCH_1})
      if(used IN_LIST HD_LAYERS AND NOT used STREQUAL layer AND NOT used IN_LIST reach)
        string(STRIP "${line}" shown)
        list(APPEND problems "${rel}:${n}: ${shown}: ${layer}/ may include ${may}")
      endif()
    endif()
  endforeach()
  set(problems ${problems} PARENT_SCOPE)
endfunction()

set(problems)
file(GLOB _entries LIST_DIRECTORIES true RELATIVE ${SRC} ${SRC}/*)
list(SORT _entries)
foreach(layer IN LISTS _entries)
  if(NOT IS_DIRECTORY ${SRC}/${layer})
    continue()
  endif()
  if(NOT layer IN_LIST HD_LAYERS)
    file(RELATIVE_PATH rel ${_root} ${SRC}/${layer})
    list(APPEND problems
         "${rel}/: a folder cmake/layers.cmake does not name (add it to HD_LAYERS with its uses)")
    continue()
  endif()
  hd_layer_reach(${layer} reach)
  file(GLOB_RECURSE files ${SRC}/${layer}/*.h ${SRC}/${layer}/*.hpp ${SRC}/${layer}/*.cpp
       ${SRC}/${layer}/*.cc ${SRC}/${layer}/*.inc)
  list(SORT files)
  foreach(file IN LISTS files)
    # The fast path: only the include lines, no line numbers.
    file(STRINGS ${file} includes REGEX "${_include_re}")
    foreach(line IN LISTS includes)
      if(line MATCHES "${_include_re}")
        set(used ${CMAKE_MATCH_1})
        if(used IN_LIST HD_LAYERS AND NOT used STREQUAL layer AND NOT used IN_LIST reach)
          hd_report_file(${file} ${layer} "${reach}")
          break()
        endif()
      endif()
    endforeach()
  endforeach()
endforeach()

if(problems)
  foreach(p IN LISTS problems)
    message(NOTICE "${p}")
  endforeach()
  list(LENGTH problems count)
  message(FATAL_ERROR "${count} problem(s) with the layering of ${SRC} (cmake/layers.cmake)")
endif()
