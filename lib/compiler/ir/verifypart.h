/* verifypart.h: check a partition set against the original phases, the
 * work of llm-verify-partition (see man/llm-verify-partition.1 and
 * share/doc/llm/formats.txt, "partition.json").
 *
 * Two independent checks per phase.  On the claims of partition.json,
 * against the original IR: every op exactly once (in a partition, in the
 * glue, or copied as an allowlisted constant), program order kept, no
 * producer after its consumer, and each partition's inputs and outputs
 * exactly the values that cross its bounds.  On the parts' IR: the glue's
 * public function has the original's name, type and attributes, and
 * walking the glue and every kernel it calls, op by op, reproduces the
 * original function: each op equal to the original one it claims to be
 * (up to llm.id/llm.layer/llm.stage), reading the same values. */
#ifndef LLM_VERIFYPART_H
#define LLM_VERIFYPART_H

#include <jansson.h>

#define LLM_PARTITION_REPORT_FORMAT "llm-partition-report/1"

/* Verifies the partition set described by path (partition.json).
 * Returns 0 when it is valid, 1 when it has violations, -1 on trouble
 * (an unreadable or malformed partition.json, an original phase that
 * cannot be read; llm_errmsg says what).  On 0 and 1, *report is a new
 * reference to the report (format llm-partition-report/1): counts and
 * one object per violation. */
int llm_verify_partition(const char *path, json_t **report);

#endif
