/* cfvars.c - a group's variables as xarray's decode_cf_variables sees
 * them: time bounds and stackable character dimensions (see cfvars.h). */
#include "cfvars.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A variable: its name, and the units and calendar it is decoded with
 * (its own, or a bounded time variable's; borrowed from the input's
 * attributes while building, then copied). */
struct cfv {
  char *name;
  char *units, *calendar; /* inherited only (own ones stay in its attrs) */
};

/* A dimension: its name, and whether character arrays along it join. */
struct cfdim {
  char *name;
  int stackable;
};

struct cfvars {
  struct cfv *v; /* variables with something inherited, by name */
  size_t nv;
  struct cfdim *d; /* every dimension a variable names, by name */
  size_t nd;
};

/* qsort / bsearch by name (the first member of both structs). */
static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The string attribute k of o, or NULL. */
static const char *attr_str(json_t *o, const char *k) {
  return json_string_value(json_object_get(o, k));
}

/* Is v a variable (dimension names, all strings)? */
static int is_var(const struct cfvar_in *v) {
  if (!json_is_array(v->dims))
    return 0;
  for (size_t i = 0; i < json_array_size(v->dims); i++)
    if (!json_is_string(json_array_get(v->dims, i)))
      return 0;
  return 1;
}

/* A variable's place in the input, sorted by its name. */
struct ix {
  const char *name; /* first: by_name sorts these too */
  size_t i;
};

/* The variable named name among the n sorted ones (its index into the
 * input), or -1. */
static long find_var(const struct ix *ord, size_t n, const char *name) {
  const struct ix *x = bsearch(&name, ord, n, sizeof *ord, by_name);
  return x ? (long)x->i : -1;
}

/* Units and calendar, effective while the bounds are applied in order. */
struct eff {
  const char *units, *calendar;
  int got_units, got_calendar; /* inherited */
};

/* xarray's _update_bounds_attributes over the variables in name order:
 * into e, what each variable ends up with. */
static void apply_bounds(const struct cfvar_in *v, const struct ix *ord,
                         size_t n, struct eff *e) {
  for (size_t k = 0; k < n; k++) {
    size_t i = ord[k].i;
    const char *units = e[i].units;
    const char *b = attr_str(v[i].attrs, "bounds");
    if (!units || !strstr(units, "since") || !b)
      continue;
    long t = find_var(ord, n, b);
    if (t < 0)
      continue;
    if (!e[t].units) {
      e[t].units = units;
      e[t].got_units = 1;
    }
    if (e[i].calendar && !e[t].calendar) {
      e[t].calendar = e[i].calendar;
      e[t].got_calendar = 1;
    }
  }
}

/* Is dim stackable among the n variables (see cfvars.h)? */
static int stackable(const struct cfvar_in *v, const struct ix *ord, size_t n,
                     const char *dim) {
  if (find_var(ord, n, dim) >= 0)
    return 0;
  for (size_t k = 0; k < n; k++) {
    json_t *d = v[ord[k].i].dims;
    size_t nd = json_array_size(d);
    for (size_t j = 0; j < nd; j++)
      if (!strcmp(json_string_value(json_array_get(d, j)), dim) &&
          (!v[ord[k].i].is_bytes || j + 1 != nd))
        return 0;
  }
  return 1;
}

/* Copy the inherited units and calendar and the dimensions into cv. */
static int fill(struct cfvars *cv, const struct cfvar_in *v,
                const struct ix *ord, size_t n, const struct eff *e) {
  for (size_t k = 0; k < n; k++) {
    size_t i = ord[k].i;
    if (!e[i].got_units && !e[i].got_calendar)
      continue;
    struct cfv *w = &cv->v[cv->nv++];
    w->name = strdup(v[i].name);
    w->units = e[i].got_units ? strdup(e[i].units) : NULL;
    w->calendar = e[i].got_calendar ? strdup(e[i].calendar) : NULL;
    if (!w->name || (e[i].got_units && !w->units) ||
        (e[i].got_calendar && !w->calendar))
      return -ENOMEM;
  }
  for (size_t k = 0; k < n; k++) {
    json_t *d = v[ord[k].i].dims;
    for (size_t j = 0; j < json_array_size(d); j++) {
      const char *name = json_string_value(json_array_get(d, j));
      size_t q = 0;
      while (q < cv->nd && strcmp(cv->d[q].name, name))
        q++;
      if (q < cv->nd)
        continue;
      if (!(cv->d[cv->nd].name = strdup(name)))
        return -ENOMEM;
      cv->d[cv->nd++].stackable = stackable(v, ord, n, name);
    }
  }
  qsort(cv->d, cv->nd, sizeof *cv->d, by_name);
  return 0;
}

int cfvars_new(const struct cfvar_in *in, size_t n, struct cfvars **out,
               struct zerr *err) {
  *out = NULL;
  struct ix *ord = malloc((n ? n : 1) * sizeof *ord);
  struct eff *e = calloc(n ? n : 1, sizeof *e);
  struct cfvars *cv = calloc(1, sizeof *cv);
  size_t nvar = 0, ndims = 0;
  for (size_t i = 0; ord && i < n; i++)
    if (is_var(&in[i])) {
      ord[nvar++] = (struct ix){in[i].name, i};
      ndims += json_array_size(in[i].dims);
      e[i].units = attr_str(in[i].attrs, "units");
      e[i].calendar = attr_str(in[i].attrs, "calendar");
    }
  if (cv) {
    cv->v = calloc(nvar ? nvar : 1, sizeof *cv->v);
    cv->d = calloc(ndims ? ndims : 1, sizeof *cv->d);
  }
  int rc = ord && e && cv && cv->v && cv->d ? 0 : -ENOMEM;
  if (rc == 0) {
    qsort(ord, nvar, sizeof *ord, by_name);
    apply_bounds(in, ord, nvar, e);
    rc = fill(cv, in, ord, nvar, e);
  }
  free(ord);
  free(e);
  if (rc < 0) {
    cfvars_free(cv);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  *out = cv;
  return 0;
}

void cfvars_free(struct cfvars *cv) {
  if (!cv)
    return;
  for (size_t i = 0; cv->v && i < cv->nv; i++) {
    free(cv->v[i].name);
    free(cv->v[i].units);
    free(cv->v[i].calendar);
  }
  for (size_t i = 0; cv->d && i < cv->nd; i++)
    free(cv->d[i].name);
  free(cv->v);
  free(cv->d);
  free(cv);
}

int cfvars_attrs(const struct cfvars *cv, const char *name, json_t *attrs,
                 json_t **out, struct zerr *err) {
  *out = NULL;
  const struct cfv *w =
      cv ? bsearch(&name, cv->v, cv->nv, sizeof *cv->v, by_name) : NULL;
  if (!w)
    return 0;
  json_t *a = json_is_object(attrs) ? json_copy(attrs) : json_object();
  if (!a ||
      (w->units &&
       json_object_set_new(a, "units", json_string(w->units)) < 0) ||
      (w->calendar &&
       json_object_set_new(a, "calendar", json_string(w->calendar)) < 0)) {
    json_decref(a);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  *out = a;
  return 0;
}

int cfvars_stackable(const struct cfvars *cv, const char *dim) {
  const struct cfdim *d =
      cv ? bsearch(&dim, cv->d, cv->nd, sizeof *cv->d, by_name) : NULL;
  return d && d->stackable;
}
