# Module boundaries and warnings for the project's own targets.
#
# Headers are included rooted at the repository ("graph/op_graph.h",
# "oneflow_lite/core/shape.h"), but the repository root is no include path:
# ofl_expose_folder gives each library an include root of its own in the
# build tree, holding one symbolic link named like the folder
# (build/include/ofl_graph/graph -> <source>/graph). A target therefore sees
# "graph/..." only when it links ofl_graph, directly or through a PUBLIC link
# of a library whose headers include graph/. The module arrows of
# DESIGN.md section 2 are thus the target_link_libraries of each folder, and
# an include across a missing arrow fails to compile
# (tests/arrows/CMakeLists.txt proves it). Where a header-level PUBLIC link
# lets a higher layer see more than its arrow (python sees graph/ types
# through api's headers), scripts/check_arrows.py is the enforcer.

# ofl_expose_folder(TARGET FOLDER [PRIVATE]): "FOLDER/x.h" becomes
# includable by TARGET and (unless PRIVATE) by every target linking it.
function(ofl_expose_folder target folder)
  set(scope PUBLIC)
  if(ARGN STREQUAL "PRIVATE")
    set(scope PRIVATE)
  endif()
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "INTERFACE_LIBRARY")
    set(scope INTERFACE)
  endif()
  set(root ${PROJECT_BINARY_DIR}/include/${target})
  get_filename_component(parent ${root}/${folder} DIRECTORY)
  file(MAKE_DIRECTORY ${parent})
  file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${folder} ${root}/${folder} SYMBOLIC)
  target_include_directories(${target} ${scope} $<BUILD_INTERFACE:${root}>)
endfunction()

# -Wall -Wextra on every C and C++ source of the project (added before the
# project's folders, so third-party code is untouched; third-party headers
# come from imported targets or SYSTEM include paths, so their warnings are
# not ours). OFL_WERROR makes them errors: ON when the environment has CI
# set, and scripts/test.sh passes it.
if(DEFINED ENV{CI} AND NOT "$ENV{CI}" STREQUAL "" AND NOT "$ENV{CI}" MATCHES "^(0|false|FALSE)$")
  set(ofl_werror_default ON)
else()
  set(ofl_werror_default OFF)
endif()
option(OFL_WERROR "Treat compiler warnings as errors (project targets only)" ${ofl_werror_default})
add_compile_options($<$<COMPILE_LANGUAGE:C,CXX>:-Wall> $<$<COMPILE_LANGUAGE:C,CXX>:-Wextra>)
if(OFL_WERROR)
  add_compile_options($<$<COMPILE_LANGUAGE:C,CXX>:-Werror>)
endif()
