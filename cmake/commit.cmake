# Writes OUT with heterodyne's git commit (suffixed "-dirty" with local changes), at every build,
# touching the file only when the text changes: provenance names the code that really ran.
execute_process(COMMAND git -C ${SRC} rev-parse --short=12 HEAD
  OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT commit)
  set(commit unknown)
else()
  execute_process(COMMAND git -C ${SRC} diff --quiet HEAD -- src RESULT_VARIABLE dirty ERROR_QUIET)
  if(NOT dirty EQUAL 0)
    set(commit "${commit}-dirty")
  endif()
endif()
set(text "// Generated at build time by cmake/commit.cmake.\n#pragma once\nnamespace hd::build {\ninline constexpr const char* kCommit = \"${commit}\";\n}\n")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT "${old}" STREQUAL "${text}")
  file(WRITE ${OUT} "${text}")
endif()
