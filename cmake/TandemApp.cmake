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
# out otherwise. The GPU part registers its implementations (gpu/gpu_factory.h); without it, they
# throw gpu::GpuError, so an app needs no stub for builds without CUDA. Every app is linked whole
# into the targets that call tandem_link_apps(), so its registrations are kept although nothing
# names them.
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
# algorithms that apps, commands or benchmarks share (no app registration). Its .cu sources, when
# CUDA is on, go to a second library, <lib>_gpu, that tandem_link_apps() links whole as it does
# the apps: they register GPU implementations that nothing names (gpu/gpu_factory.h).
function(tandem_library)
  cmake_parse_arguments(A "" "NAME" "SOURCES;LINK" ${ARGN})
  tandem_sources_for_build(sources ${A_SOURCES})
  set(gpu_sources ${sources})
  list(FILTER gpu_sources INCLUDE REGEX "\\.cu$")
  list(FILTER sources EXCLUDE REGEX "\\.cu$")
  add_library(${A_NAME} STATIC ${sources})
  target_link_libraries(${A_NAME} PUBLIC ${A_LINK})
  set_property(GLOBAL APPEND PROPERTY TANDEM_LIBRARY_TARGETS ${A_NAME})
  if(gpu_sources)
    add_library(${A_NAME}_gpu STATIC ${gpu_sources})
    target_link_libraries(${A_NAME}_gpu PUBLIC ${A_NAME})
    set_property(GLOBAL APPEND PROPERTY TANDEM_LIBRARY_GPU_TARGETS ${A_NAME}_gpu)
  endif()
endfunction()

# Links every app, and every library's GPU part, whole into `target`, and the libraries themselves
# as usual (a test beside a library finds it without a build line of its own).
function(tandem_link_apps target)
  get_property(apps GLOBAL PROPERTY TANDEM_APP_TARGETS)
  get_property(gpu_parts GLOBAL PROPERTY TANDEM_LIBRARY_GPU_TARGETS)
  get_property(libraries GLOBAL PROPERTY TANDEM_LIBRARY_TARGETS)
  foreach(a ${apps} ${gpu_parts})
    target_link_libraries(${target} PRIVATE "$<LINK_LIBRARY:WHOLE_ARCHIVE,${a}>")
  endforeach()
  target_link_libraries(${target} PRIVATE ${libraries})
endfunction()
