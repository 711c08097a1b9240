/* runtime/cpu_contention.h: how long a live run's threads waited for a core.
 *
 * A CPU calibration times each kernel by its thread's CPU time
 * (calib/cpu_bench.c, CLOCK_THREAD_CPUTIME_ID), which leaves out the time the
 * thread was runnable but waited for a core; a live task's latency includes
 * that wait. On a machine whose cores other jobs share, a simulation on that
 * calibration therefore predicts low by construction, by about the wait.
 * Linux counts it per thread in /proc/<pid>/task/<tid>/schedstat
 * (Documentation/scheduler/sched-stats.rst): three numbers, the time spent on
 * a CPU (ns), the time spent waiting on a run queue (ns) and the timeslices
 * run. /proc/pressure/cpu (Documentation/accounting/psi.rst) adds the
 * machine's view: its "some" line's total= is the microseconds in which at
 * least one task was runnable and waited.
 *
 * The parsers take a path so that tests run them on files of their own. */
#ifndef SB_RUNTIME_CPU_CONTENTION_H
#define SB_RUNTIME_CPU_CONTENTION_H

#include <stddef.h>
#include <stdint.h>

/* A sim-vs-live comparison of a CPU run is void when its workers waited for a
 * core for more than this share of the CPU time they ran: the comparison's
 * target is p50 within 10% (docs/VALIDATION.md section 5), and a task that
 * waits 10% of its CPU time on top of it runs 10% longer than its calibrated
 * time, so the wait alone could make or hide a miss of that size. */
#define CPU_CONTENTION_VOID_SHARE 0.10

struct cpu_schedstat {
	uint64_t cpu_ns;          /* on a CPU */
	uint64_t runq_wait_ns;    /* runnable, waiting on a run queue */
	uint64_t timeslices;
};

/* Reads a schedstat file (one line: three whole numbers). Returns 0, or -1
 * with err naming the path and what is wrong (missing, not three numbers). */
int cpu_schedstat_read(const char *path, struct cpu_schedstat *out, char *err, size_t errlen);

/* Reads a PSI file's "some" line total= (microseconds). Returns 0, or -1 with
 * err (missing, no "some" line, no total=). */
int cpu_pressure_some_us(const char *path, uint64_t *total_us, char *err, size_t errlen);

/* The calling thread's counters (/proc/thread-self/schedstat). Returns 0, or
 * -1 where the kernel does not provide them. */
int cpu_schedstat_self(struct cpu_schedstat *out);

/* The machine's PSI "some" total for the CPU (/proc/pressure/cpu): 0, or -1
 * where the kernel does not provide it. */
int cpu_pressure_self_us(uint64_t *total_us);

#endif
