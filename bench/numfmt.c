/* numfmt.c - ns per number of the numeric text path for float64 and
 * int32: render_fixed one element a call, and render_fixed_run 64 lines a
 * call (the text views' loop), with snprintf("%.17g") and snprintf("%d")
 * timed in the same run as references; float32 likewise (snprintf "%.9g").
 *
 *   build/bench/numfmt [COUNT]     (default 10,000,000 numbers per row)
 *
 * Inputs are pseudo-random (a fixed seed): float32 as random finite bit
 * patterns and as bench/archives.py's kerchunk archive (K) draws them
 * (random significands and signs, magnitudes log-uniform over e^-20..e^20,
 * here 2^-29..2^29); float64 as random bit patterns
 * (every finite value, so exponents across the whole range) and as
 * uniform values in [0, 1) (typical measured data: 16-17 digits, small
 * exponents); int32 as random bit patterns; and "perf.sh mix", the values of
 * bench/perf.sh's float64 and int32 stores. They are drawn into a 1 Mi
 * element array that is walked COUNT/1Mi times, so the figure is the
 * formatting and not memory traffic. Each row is the best of 3 runs,
 * timed in this thread's CPU time (time spent descheduled on a busy
 * machine does not count); machines here are shared, so compare rows of
 * one run. "exact search" is the float path before fs/text/dtoa.c (still the
 * one float16 and bfloat16 use), through render_float_exact. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../fs/text/render.h"

#define BENCH_N (1u << 20)

/* splitmix64: a fixed, portable sequence. */
static uint64_t next_rand(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* This thread's CPU seconds. */
static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* What one row formats: element i of the input into buf, its length. */
typedef size_t (*bench_fn)(const void *in, size_t i, char *buf);

static const struct dtype *bench_f64_dt, *bench_i32_dt, *bench_f32_dt;

static size_t fmt_render_f64(const void *in, size_t i, char *buf) {
  return render_fixed(bench_f64_dt, (const double *)in + i, buf);
}
static size_t fmt_render_f32(const void *in, size_t i, char *buf) {
  return render_fixed(bench_f32_dt, (const float *)in + i, buf);
}
static size_t fmt_printf_f32(const void *in, size_t i, char *buf) {
  return (size_t)snprintf(buf, RENDER_FIXED_MAX, "%.9g",
                          (double)((const float *)in)[i]);
}
static size_t fmt_render_i32(const void *in, size_t i, char *buf) {
  return render_fixed(bench_i32_dt, (const int32_t *)in + i, buf);
}
static size_t fmt_exact_f64(const void *in, size_t i, char *buf) {
  uint64_t b;
  memcpy(&b, (const double *)in + i, 8);
  return render_float_exact(b, 52, 11, buf);
}
static size_t fmt_printf_f64(const void *in, size_t i, char *buf) {
  return (size_t)snprintf(buf, RENDER_FIXED_MAX, "%.17g",
                          ((const double *)in)[i]);
}
static size_t fmt_printf_i32(const void *in, size_t i, char *buf) {
  return (size_t)snprintf(buf, RENDER_FIXED_MAX, "%d",
                          (int)((const int32_t *)in)[i]);
}

/* Best of 3 runs of `count` numbers through render_fixed_run (the text
 * views' loop: TEXT_BLOCK = 64 lines a call), in ns per number. */
static double bench_run(const struct dtype *dt, const void *in, uint64_t count,
                        uint64_t *sink) {
  static char buf[64 * RENDER_RUN_ROOM];
  const char *p = in;
  double best = 1e30;
  for (int run = 0; run < 3; run++) {
    double t0 = now();
    uint64_t total = 0;
    for (uint64_t j = 0; j < count; j += 64) {
      size_t i = (size_t)(j & (BENCH_N - 1));
      total +=
          render_fixed_run(dt, p + i * dt->size, 64, buf) + (uint8_t)buf[0];
    }
    double dt_s = now() - t0;
    *sink += total;
    if (dt_s < best)
      best = dt_s;
  }
  return best * 1e9 / (double)count;
}

/* Float element i of bench/perf.sh's float64 store (examples/mkstore.c's
 * numeric --dtype float64): short and 17-digit decimals, integers, tiny
 * and huge exponents, nan, inf, -0. */
static double mix_value(uint64_t i) {
  switch (i % 10007) {
  case 5:
    return __builtin_nan("");
  case 6:
    return __builtin_inf();
  case 7:
    return -__builtin_inf();
  case 8:
    return -0.0;
  }
  double x = (double)i;
  switch (i % 8) {
  case 0:
    return (double)(i % 20011) * 0.1 - 1000;
  case 1:
    return -x / 3;
  case 2:
    return x * 1e-9;
  case 3:
    return x * 1e13 + 0.5;
  case 4:
    return x * 0.5 - 3;
  case 5:
    return (double)((int64_t)(i % 2001) - 1000);
  case 6:
    return 1 / (x + 1);
  default:
    return -(double)(i % 1000 + 1) * 1e-300;
  }
}

/* Int32 element i of bench/perf.sh's int32 store (the same writer). */
static int32_t mix_int(uint64_t i) {
  if (i % 1000003 == 0)
    return INT32_MIN;
  if (i % 1000003 == 1)
    return INT32_MAX;
  if (i % 7 == 3)
    return -(int32_t)(i % 2000003);
  return (int32_t)(i % 20011) - 10005;
}

/* Best of 3 runs of `count` numbers, in ns per number; the text lengths
 * are summed into *sink so no call can be optimised away. */
static double bench_row(bench_fn fn, const void *in, uint64_t count,
                        uint64_t *sink) {
  char buf[RENDER_FIXED_MAX];
  double best = 1e30;
  for (int run = 0; run < 3; run++) {
    double t0 = now();
    uint64_t total = 0;
    for (uint64_t j = 0; j < count; j++)
      total += fn(in, (size_t)(j & (BENCH_N - 1)), buf) + (uint8_t)buf[0];
    double dt = now() - t0;
    *sink += total;
    if (dt < best)
      best = dt;
  }
  return best * 1e9 / (double)count;
}

int main(int argc, char **argv) {
  uint64_t count = argc > 1 ? strtoull(argv[1], NULL, 10) : 10000000u;
  struct dtype f64 = dtype_of(DT_FLOAT64), i32 = dtype_of(DT_INT32);
  struct dtype f32 = dtype_of(DT_FLOAT32);
  bench_f64_dt = &f64;
  bench_f32_dt = &f32;
  bench_i32_dt = &i32;
  double *bits = malloc(BENCH_N * sizeof *bits);
  double *unit = malloc(BENCH_N * sizeof *unit);
  int32_t *ints = malloc(BENCH_N * sizeof *ints);
  double *mix = malloc(BENCH_N * sizeof *mix);
  int32_t *imix = malloc(BENCH_N * sizeof *imix);
  uint32_t *f32bits = malloc(BENCH_N * sizeof *f32bits);
  uint32_t *f32k = malloc(BENCH_N * sizeof *f32k);
  if (!bits || !unit || !ints || !mix || !imix || !f32bits || !f32k)
    return 1;
  uint64_t seed = 42;
  for (size_t i = 0; i < BENCH_N; i++) {
    uint64_t b;
    do /* finite only: NaN and inf are a fixed string */
      b = next_rand(&seed);
    while (((b >> 52) & 0x7ff) == 0x7ff);
    memcpy(&bits[i], &b, 8);
    unit[i] = (double)(next_rand(&seed) >> 11) * 0x1p-53;
    ints[i] = (int32_t)(uint32_t)next_rand(&seed);
    mix[i] = mix_value(i);
    imix[i] = mix_int(i);
    uint32_t r;
    do
      r = (uint32_t)next_rand(&seed);
    while (((r >> 23) & 0xff) == 0xff);
    f32bits[i] = r;
    r = (uint32_t)next_rand(&seed);
    f32k[i] = (r & 0x807fffffu) | (98 + r % 59) << 23; /* 2^-29..2^29 */
  }
  uint64_t sink = 0;
  printf("%llu numbers per row, ns/number (best of 3)\n",
         (unsigned long long)count);
  printf("float64 random bits  render_fixed     %6.1f\n",
         bench_row(fmt_render_f64, bits, count, &sink));
  printf("float64 random bits  render_fixed_run %6.1f\n",
         bench_run(&f64, bits, count, &sink));
  printf("float64 random bits  exact search     %6.1f\n",
         bench_row(fmt_exact_f64, bits, count, &sink));
  printf("float64 random bits  snprintf %%.17g   %6.1f\n",
         bench_row(fmt_printf_f64, bits, count, &sink));
  printf("float64 in [0,1)     render_fixed     %6.1f\n",
         bench_row(fmt_render_f64, unit, count, &sink));
  printf("float64 in [0,1)     render_fixed_run %6.1f\n",
         bench_run(&f64, unit, count, &sink));
  printf("float64 in [0,1)     exact search     %6.1f\n",
         bench_row(fmt_exact_f64, unit, count, &sink));
  printf("float64 in [0,1)     snprintf %%.17g   %6.1f\n",
         bench_row(fmt_printf_f64, unit, count, &sink));
  printf("float64 perf.sh mix  render_fixed     %6.1f\n",
         bench_row(fmt_render_f64, mix, count, &sink));
  printf("float64 perf.sh mix  render_fixed_run %6.1f\n",
         bench_run(&f64, mix, count, &sink));
  printf("float64 perf.sh mix  snprintf %%.17g   %6.1f\n",
         bench_row(fmt_printf_f64, mix, count, &sink));
  printf("float32 random bits  render_fixed     %6.1f\n",
         bench_row(fmt_render_f32, f32bits, count, &sink));
  printf("float32 random bits  render_fixed_run %6.1f\n",
         bench_run(&f32, f32bits, count, &sink));
  printf("float32 random bits  snprintf %%.9g    %6.1f\n",
         bench_row(fmt_printf_f32, f32bits, count, &sink));
  printf("float32 archive K    render_fixed     %6.1f\n",
         bench_row(fmt_render_f32, f32k, count, &sink));
  printf("float32 archive K    render_fixed_run %6.1f\n",
         bench_run(&f32, f32k, count, &sink));
  printf("float32 archive K    snprintf %%.9g    %6.1f\n",
         bench_row(fmt_printf_f32, f32k, count, &sink));
  printf("int32 random bits    render_fixed     %6.1f\n",
         bench_row(fmt_render_i32, ints, count, &sink));
  printf("int32 random bits    render_fixed_run %6.1f\n",
         bench_run(&i32, ints, count, &sink));
  printf("int32 random bits    snprintf %%d      %6.1f\n",
         bench_row(fmt_printf_i32, ints, count, &sink));
  printf("int32 perf.sh mix    render_fixed     %6.1f\n",
         bench_row(fmt_render_i32, imix, count, &sink));
  printf("int32 perf.sh mix    render_fixed_run %6.1f\n",
         bench_run(&i32, imix, count, &sink));
  printf("int32 perf.sh mix    snprintf %%d      %6.1f\n",
         bench_row(fmt_printf_i32, imix, count, &sink));
  printf("(checksum %llu)\n", (unsigned long long)sink);
  free(bits);
  free(unit);
  free(ints);
  free(mix);
  free(imix);
  free(f32bits);
  free(f32k);
  return 0;
}
