/*
 * lockorder.h -- mutexes a layer takes in one fixed order, the order
 * checked in debug builds.  The layer numbers its nested mutexes 1, 2, 4
 * ... in the order they may be taken and keeps, per thread, the set of
 * those it holds; taking one while holding one later in the order fails
 * an assertion (two threads doing the opposite would deadlock).  With
 * NDEBUG only the mutex calls remain.  Used by the handle (engine_int.h)
 * and the log (wal.c), each with its own set.
 */
#ifndef ENGINE_LOCKORDER_H
#define ENGINE_LOCKORDER_H

#include <assert.h>
#include <pthread.h>

static inline void lock_in_order(unsigned *held, pthread_mutex_t *mu, unsigned which) {
#ifndef NDEBUG
    assert(*held < which);
    *held |= which;
#else
    (void)held;
    (void)which;
#endif
    pthread_mutex_lock(mu);
}

static inline void unlock_in_order(unsigned *held, pthread_mutex_t *mu, unsigned which) {
#ifndef NDEBUG
    assert(*held & which);
    *held &= ~which;
#else
    (void)held;
    (void)which;
#endif
    pthread_mutex_unlock(mu);
}

#endif
