// The dpi app (`tandem run --app dpi --ids-rules PATH`): an IDS/IPS over Snort/Suricata rules,
// DPI's two stages (dpi_match.h) per packet, the verdict from the matched rules' actions
// (dpi_app_core.h: port 0 clean, port 1 alert, dropped on a drop rule or with --on-match drop;
// bytes DPI cannot see are dropped or, with --uninspected forward, sent to port 2).
//
// Paths. The CPU paths run DpiEngine: one packet at a time through its port groups' automata
// (scalar), or the burst's packets sorted by automaton and length and walked in lockstep
// (batched, the G-Opt paper's DPI). The GPU runs the flat program (dpi_program.h), both stages
// per thread: on whole frames (the frame and resident runners, so DPI runs under the scheduler
// on CPU groups and GPUs alike) or on items of up to 504 payload bytes (the offload engine; a
// longer payload is matched by the worker, kResultOnWorker). Frames are never rewritten.
//
// Stage placement: on the CPU both stages run on the CPU; on the GPU paths both run on the GPU.
// `tandem match --device gpu` runs stage 1 on the GPU and stage 2 on the CPU from its ids.
//
// The reference (--verify) is DpiEngine's scalar match, which dpi_test.cc checks against every
// pattern and rule searched for on its own.
//
// Live updates (`tandem run --control`, dpi_control.h): rules added and deleted while the app
// forwards, on the CPU paths and the GPU's item path (each batch's program uploaded whole); the
// whole-frame and resident paths run on a device copy made at the start.
#pragma once

#include <memory>

#include "apps/dpi/dpi_app_core.h"
#include "apps/dpi/dpi_tables.h"
#include "apps/forward_app.h"

namespace tandem::dpi {

// The app over the tables (which must outlive it).
std::unique_ptr<ForwardApp> make_dpi_app(const DpiTables& tables, DpiPolicy policy);

// What DpiEngine reads of an inspected key.
PacketInfo packet_info_of(const DpiKey& k);

// The result of one key by DpiEngine (the CPU paths' answer): the matched rules' action bits, or
// kResultUninspected.
uint32_t engine_result(const DpiTables& t, const DpiKey& k);

}  // namespace tandem::dpi
