/* Minimal stand-in used only while gopt.py parses its input. */
#ifndef GOPT_FAKE_STDBOOL_H
#define GOPT_FAKE_STDBOOL_H
#define bool _Bool
#define true 1
#define false 0
#endif
