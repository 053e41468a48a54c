# Runs cmake/check_layers.cmake on made-up src/ trees: one that keeps to the table must pass, an
# include of a layer above and a folder the table does not name must fail, naming file:line.
#   cmake -DCHECK=cmake/check_layers.cmake -DWORK=<scratch dir> -P layers_check_test.cmake
cmake_minimum_required(VERSION 3.25)

# Writes a tree under WORK/<name>/src from pairs "relative path" "content" and runs the check on
# it; sets <name>_rc and <name>_out (stdout and stderr together).
function(check_tree name)
  file(REMOVE_RECURSE ${WORK}/${name})
  set(files ${ARGN})
  while(files)
    list(POP_FRONT files path content)
    file(WRITE ${WORK}/${name}/src/${path} "${content}")
  endwhile()
  execute_process(COMMAND ${CMAKE_COMMAND} -DSRC=${WORK}/${name}/src -P ${CHECK}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  set(${name}_rc ${rc} PARENT_SCOPE)
  set(${name}_out "${out}" PARENT_SCOPE)
endfunction()

# Within the table: a layer's own headers, src/*.h, direct uses and layers reached through them
# (report reaches common through store), outside libraries with a slash, a comment naming run/.
check_tree(fine
  "errors.h" "#pragma once\n"
  "analysis/kl.h" "#pragma once\n#include <vector>\n#include \"errors.h\"\n"
  "store/experiment.h" "#pragma once\n#include \"analysis/kl.h\"\n#include \"common/utf8.h\"\n"
  "report/show.cpp" "#include \"common/utf8.h\"\n#include <nlohmann/json.hpp>\n// see run/diff.h\n"
  "cli/main.cpp" "#include \"serve/server.h\"\n#include \"store/experiment.h\"\n")
if(NOT fine_rc EQUAL 0)
  message(FATAL_ERROR "a tree that keeps to the table was refused:\n${fine_out}")
endif()

# Upward: analysis (pure math) including store, engine including run with <>, on known lines.
check_tree(upward
  "analysis/kl.cpp" "// KL\n#include \"analysis/kl.h\"\n#include \"store/experiment.h\"\n"
  "engine/arm.h" "#pragma once\n  #  include <run/diff.h>\n"
  "report/show.cpp" "#include \"store/experiment.h\"\n#include \"engine/arm.h\"\n")
if(upward_rc EQUAL 0)
  message(FATAL_ERROR "includes of layers above passed the check:\n${upward_out}")
endif()
foreach(line "src/analysis/kl.cpp:3: #include \"store/experiment.h\""
             "src/engine/arm.h:2: #  include <run/diff.h>"
             "src/report/show.cpp:2: #include \"engine/arm.h\"")
  string(FIND "${upward_out}" "${line}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the check did not name '${line}':\n${upward_out}")
  endif()
endforeach()
string(FIND "${upward_out}" "show.cpp:1:" at)
if(NOT at EQUAL -1)
  message(FATAL_ERROR "the check named an allowed include (report -> store):\n${upward_out}")
endif()

# A folder nobody placed in the table.
check_tree(unnamed "plugins/logit_lens.cpp" "#include \"analysis/kl.h\"\n")
string(FIND "${unnamed_out}" "src/plugins/" at)
if(unnamed_rc EQUAL 0 OR at EQUAL -1)
  message(FATAL_ERROR "a folder outside the table was not refused by name:\n${unnamed_out}")
endif()
