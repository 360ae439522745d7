/*
 * Schema 10 extensions a plan may carry, at load: control-flow graphs (SEC_SUBGRAPHS, run by the
 * control path) and state variables (SEC_STATE; their copies around a run are exec's,
 * tgr_state_in/out in exec/exec.h). The build's generated load/extensions_built_in.c routes each
 * to its full form (extensions.c) in the host library and in a firmware whose plan has it, and to
 * the plain form (extensions_plain.c) otherwise, which refuses such a plan: a firmware links
 * neither when its plan has neither.
 */
#ifndef TGR_EXTENSIONS_H
#define TGR_EXTENSIONS_H

#include "plan/plan.h"

/* Bind the section [start, end) of the plan (the loader calls each only when it is present). */
tgr_status tgr_bind_graphs(tgr_plan *p, uint32_t start, uint32_t end, tgr_error *err);
tgr_status tgr_bind_state(tgr_plan *p, uint32_t start, uint32_t end, tgr_error *err);
/* After the tensors are checked: the variables against their STATE tensors (every plan). */
tgr_status tgr_check_state(const tgr_plan *p, uint32_t section_len, tgr_error *err);

tgr_status tgr_full_bind_graphs(tgr_plan *p, uint32_t start, uint32_t end, tgr_error *err);
tgr_status tgr_full_bind_state(tgr_plan *p, uint32_t start, uint32_t end, tgr_error *err);
tgr_status tgr_full_check_state(const tgr_plan *p, uint32_t section_len, tgr_error *err);

tgr_status tgr_plain_bind_graphs(tgr_plan *p, uint32_t start, uint32_t end, tgr_error *err);
tgr_status tgr_plain_bind_state(tgr_plan *p, uint32_t start, uint32_t end, tgr_error *err);
tgr_status tgr_plain_check_state(const tgr_plan *p, uint32_t section_len, tgr_error *err);

#endif /* TGR_EXTENSIONS_H */
