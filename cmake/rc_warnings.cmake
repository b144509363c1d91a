# Applied per target (rc_set_warnings) so third-party headers stay quiet.
function(rc_set_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter>
    # GCC 12 reports impossible overlaps inside libstdc++'s own string code at -O3
    # (GCC bug 105329); the warning says nothing about our code.
    $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:GNU>>:-Wno-restrict>)
  if(RC_WERROR)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
  endif()
endfunction()
