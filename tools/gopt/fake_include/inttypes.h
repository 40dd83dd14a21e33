/* Minimal stand-in used only while gopt.py parses its input. */
#include <stdint.h>
