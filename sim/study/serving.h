/* sim/study/serving.h: the serving configuration a run's answer depends on, as one value
 * (serving.c), and the one text every header prints it as (run, live, capacity, search).
 * For an LLM: tensor and expert parallelism, replicas, a disaggregated fleet's pools, the
 * router when there are several replicas, the engine profile and the GPUs in total; for a
 * node-level model: its devices (workers). */
#ifndef SB_STUDY_SERVING_H
#define SB_STUDY_SERVING_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "../engine/engine.h"

struct opt_set;

struct study_serving {
	int llm;
	uint32_t workers;            /* devices (an LLM: engines of tp GPUs each) */
	uint32_t replicas;           /* an LLM: engines behind a router (1: none, the workers share one queue) */
	uint32_t tp, ep;             /* an LLM: GPUs a replica splits over; its experts' (1: none) */
	uint32_t prefill, decode;    /* a disaggregated fleet's pools (prefill + decode = replicas), else 0 */
	char router[48];             /* several replicas: the router's name, else "" */
	char engine[64];             /* --engine: the profile's name, else "" */
	uint32_t gpus;               /* an LLM: tp a replica, in total; node-level: workers */
};

/* The serving configuration of a configured run: o its options (tp, ep), c its fleet as
 * run_fleet_setup left it, engine --engine's profile name or NULL. */
void study_serving_of(const struct opt_set *o, int llm, const struct eng_config *c, const char *engine,
                      struct study_serving *sv);

/* The same from the run options alone, no hardware opened (a search's configuration, before its
 * capacity runs): o parsed against run's table, every count in it already checked. */
void study_serving_of_options(const struct opt_set *o, int llm, struct study_serving *sv);

/* sv as the headers print it: "1 replica at TP 4, 4 GPUs", "1 prefill + 1 decode replicas at
 * TP 2 behind round-robin, 4 GPUs, engine vllm-0.15", "2 workers sharing one queue at TP 1, 2 GPUs";
 * node-level "2 workers". Returns buf. */
const char *study_serving_text(const struct study_serving *sv, char *buf, size_t len);

/* sv as the JSON members every summary carries (after a comma, no trailing one):
 * "serving":{"tp":..,"ep":..,"replicas":..,"prefill_replicas":..,"decode_replicas":..,"router":..,
 * "engine":..,"gpus":..}, router and engine null when none; node-level {"workers":..}. Written
 * to the stream it is handed (a summary being built), never to the user's. */
void study_serving_json(FILE *f, const struct study_serving *sv);

#endif
