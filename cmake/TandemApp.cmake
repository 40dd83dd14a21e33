# tandem_sources_for_build(<var> <files...>): the files this build compiles, in <var>: .cu files
# only when CUDA is on.
function(tandem_sources_for_build var)
  set(sources)
  foreach(s ${ARGN})
    if(s MATCHES "\\.cu$" AND NOT TANDEM_HAVE_CUDA)
      continue()
    endif()
    list(APPEND sources ${s})
  endforeach()
  set(${var} ${sources} PARENT_SCOPE)
endfunction()

# tandem_add_app(NAME <app> SOURCES <files...> [LINK <libraries...>])
#
# Builds one app (apps/<app>/, registered with TANDEM_REGISTER_APP) as the static library
# tandem_app_<app>. Sources ending in .cu are the app's GPU part: compiled when CUDA is on, left
# out otherwise (the app then reports that it has no GPU part). Every app is linked whole into the
# targets that call tandem_link_apps(), so its registration is kept although nothing names it.
function(tandem_add_app)
  cmake_parse_arguments(A "" "NAME" "SOURCES;LINK" ${ARGN})
  if(NOT A_NAME OR NOT A_SOURCES)
    message(FATAL_ERROR "tandem_add_app: NAME and SOURCES are required")
  endif()
  tandem_sources_for_build(sources ${A_SOURCES})
  set(target tandem_app_${A_NAME})
  string(REPLACE "-" "_" target ${target})
  add_library(${target} STATIC ${sources})
  target_link_libraries(${target} PUBLIC tandem_app_api ${A_LINK})
  set_property(GLOBAL APPEND PROPERTY TANDEM_APP_TARGETS ${target})
endfunction()

# tandem_library(NAME <lib> SOURCES <files...> [LINK <libraries...>]): a library of tables and
# algorithms under apps/ that apps and commands share (no registration). .cu sources as above.
function(tandem_library)
  cmake_parse_arguments(A "" "NAME" "SOURCES;LINK" ${ARGN})
  tandem_sources_for_build(sources ${A_SOURCES})
  add_library(${A_NAME} STATIC ${sources})
  target_link_libraries(${A_NAME} PUBLIC ${A_LINK})
endfunction()

# Links every app whole into `target`.
function(tandem_link_apps target)
  get_property(apps GLOBAL PROPERTY TANDEM_APP_TARGETS)
  foreach(a ${apps})
    target_link_libraries(${target} PRIVATE "$<LINK_LIBRARY:WHOLE_ARCHIVE,${a}>")
  endforeach()
endfunction()
