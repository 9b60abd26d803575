# Run at build time (every build): writes the commit and whether the tree had local changes
# into OUTPUT, touching the file only when that changes so nothing rebuilds needlessly.
execute_process(COMMAND git -C "${SOURCE_DIR}" rev-parse HEAD OUTPUT_VARIABLE commit
                OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  # A copy without .git (the GPU machine's): ci/gpu scripts leave the commit in .dnnb-commit.
  if(EXISTS "${SOURCE_DIR}/.dnnb-commit")
    file(STRINGS "${SOURCE_DIR}/.dnnb-commit" commit LIMIT_COUNT 1)
  else()
    set(commit "unknown (not a git checkout)")
  endif()
endif()
execute_process(COMMAND git -C "${SOURCE_DIR}" status --porcelain --untracked-files=no
                OUTPUT_VARIABLE changes ERROR_QUIET RESULT_VARIABLE rc)
if(rc EQUAL 0 AND NOT changes STREQUAL "")
  set(dirty true)
else()
  set(dirty false)
endif()
set(text "// Generated at build time by core/git_info.cmake.\n#pragma once\n#define DNNB_GIT_COMMIT \"${commit}\"\n#define DNNB_GIT_DIRTY ${dirty}\n")
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" old)
endif()
if(NOT "${old}" STREQUAL "${text}")
  file(WRITE "${OUTPUT}" "${text}")
endif()
