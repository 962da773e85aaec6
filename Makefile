# Every entry point of the project: make, make test, make bench-*, make deps.
#
# Knobs:  DEBUG=1                 -O1 -g, asserts on, own build dir (build/debug)
#         SANITIZER=a,b           any -fsanitize= list gcc takes (own build dir)
#         V=1                     show commands
#         WERROR=1                -Werror (on by default when CI=true)
#         FUZZ_SECONDS=N          length of the fuzz run in `make test`

SHELL := /bin/bash
CC ?= gcc
ifeq ($(origin CC),default)
CC := gcc
endif
CLANG ?= clang
FUZZ_SECONDS ?= 20

ifeq ($(V),1)
Q :=
else
Q := @
endif

# The debug build: assertions on (no NDEBUG), so the invariants the
# engine states as assert() run in every suite (docs/building.md, The
# debug build).  Each flavour has a build dir of its own: build (plain),
# build/debug, build/san, build/debug-san.
ifeq ($(DEBUG),1)
OPTFLAGS := -O1 -g
FLAVOUR_DIR := debug
else
OPTFLAGS := -O2 -g -DNDEBUG
FLAVOUR_DIR :=
endif

ifneq ($(SANITIZER),)
SANFLAGS := -fsanitize=$(SANITIZER) -fno-omit-frame-pointer -fno-sanitize-recover=all
FLAVOUR_DIR := $(if $(FLAVOUR_DIR),$(FLAVOUR_DIR)-san,san)
else
SANFLAGS :=
endif
BUILD ?= build$(if $(FLAVOUR_DIR),/$(FLAVOUR_DIR))

# A build dir holds one flavour (optimization and sanitizer flags), named
# in $(BUILD)/flavour.txt when it is first built: building another flavour
# into it (BUILD=build DEBUG=1, say) is refused, so objects of two never
# mix in one library.
FLAVOUR := $(strip $(OPTFLAGS) $(SANFLAGS))
ifeq ($(filter clean deps format lint deps-graph deps-report,$(MAKECMDGOALS)),)
FLAVOUR_OLD := $(shell cat $(BUILD)/flavour.txt 2>/dev/null)
ifneq ($(FLAVOUR_OLD),)
ifneq ($(FLAVOUR_OLD),$(FLAVOUR))
$(error $(BUILD) holds a build with "$(FLAVOUR_OLD)", not "$(FLAVOUR)": give the DEBUG and SANITIZER it was built with, another BUILD, or remove $(BUILD))
endif
else
$(shell mkdir -p $(BUILD) && echo '$(FLAVOUR)' >$(BUILD)/flavour.txt)
endif
endif

ifeq ($(CI),true)
WERROR ?= 1
endif
ifeq ($(WERROR),1)
WFLAGS := -Wall -Wextra -Werror
else
WFLAGS := -Wall -Wextra
endif
# -O1 changes the flow analysis two of gcc's guesses rest on: in the debug
# build they warn about suites that are clean at -O2, and stay warnings.
ifeq ($(DEBUG),1)
WFLAGS += -Wno-error=maybe-uninitialized -Wno-error=format-truncation
endif

CFLAGS_BASE := -std=gnu11 $(OPTFLAGS) $(WFLAGS) $(SANFLAGS) -D_GNU_SOURCE -pthread -I. -Iengine
LDLIBS := -luring -lxxhash -lzstd -lpthread -lm
# common/: header-only conventions (the seeded RNG, the key format, the JSON
# string writer) that stress, tools, bench, tests and the fault library
# include; never the engine.
COMMON_H := $(wildcard common/*.h)

# Debian packages the project needs (make deps installs what is missing).
DEB_PACKAGES := build-essential pkg-config liburing-dev libxxhash-dev libzstd-dev \
                libfiu-dev fiu-utils libcriterion-dev clang libclang-rt-14-dev clang-format python3 \
                black python3-flake8 \
                libsqlite3-dev librocksdb-dev
# bench-engine's peers: RocksDB's db_bench, and LMDB (bench/bench_lmdb.c).
BENCH_PACKAGES := rocksdb-tools liblmdb-dev

ENGINE_SRC := $(wildcard engine/*.c)
ENGINE_OBJ := $(patsubst %.c,$(BUILD)/obj/%.o,$(ENGINE_SRC))
# The fault build: the same sources with libfiu points compiled in.
ENGINE_FIU_OBJ := $(patsubst %.c,$(BUILD)/obj-fiu/%.o,$(ENGINE_SRC))
LDLIBS_FIU := $(LDLIBS) -lfiu
# engine-tool (tools/engine-tool/): a program on the engine's public and
# inspection headers, linked with the plain library.
TOOL_SRC   := $(wildcard tools/engine-tool/*.c)
TOOL_OBJ   := $(patsubst %.c,$(BUILD)/obj/%.o,$(TOOL_SRC))
FAULTS_SRC := $(filter-out faults/powerloss.c,$(wildcard faults/*.c))
FAULTS_OBJ := $(patsubst %.c,$(BUILD)/obj-fiu/%.o,$(FAULTS_SRC))
# faults/door.o defines open, read, write ... (the door at the POSIX
# boundary, faults/README.md): the linker takes it into every program that
# links libfaults.a, and those calls reach libc through dlsym (in libc).
TEST_SRC   := $(wildcard tests/test_*.c)
TEST_BIN   := $(patsubst tests/%.c,$(BUILD)/tests/%,$(TEST_SRC))
# Suites of the fault library (and those that use its power-loss journal)
# link the fault build of the engine.
FAULT_TESTS := $(patsubst tests/%.c,$(BUILD)/tests/%,$(wildcard tests/test_faults*.c tests/test_powerloss*.c tests/test_lost_files*.c))

.DEFAULT_GOAL := all
# --version of every program: the tree's git describe and the build's
# options, passed to the objects that print them (common/version.h);
# version.txt changes only when they do, and those objects depend on it.
GIT_DESCRIBE := $(shell git describe --always --dirty --tags 2>/dev/null || echo unknown)
BUILD_DESC := $(strip $(OPTFLAGS) $(SANFLAGS) $(WFLAGS))
VERSION_TXT := $(BUILD)/version.txt
$(shell mkdir -p $(BUILD) && { echo '$(GIT_DESCRIBE) $(BUILD_DESC)' | cmp -s - $(VERSION_TXT) || echo '$(GIT_DESCRIBE) $(BUILD_DESC)' >$(VERSION_TXT); })
VERSION_DEFS := -DPROJECT_VERSION='"$(GIT_DESCRIBE)"' -DPROJECT_BUILD='"$(BUILD_DESC)"'
VERSIONED := $(BUILD)/obj/tools/engine-tool/main.o $(BUILD)/obj-fiu/stress/stress.o $(BUILD)/powerloss
$(VERSIONED): $(VERSION_TXT) common/version.h
$(VERSIONED): CFLAGS_BASE += $(VERSION_DEFS)

.PHONY: all deps test clean fuzz demo bench-deps bench-engine
all: deps $(BUILD)/libengine.a $(BUILD)/libengine-fiu.a $(BUILD)/libfaults.a $(BUILD)/engine-tool $(BUILD)/powerloss $(BUILD)/stress

# Install missing Debian packages (as root, or through sudo).  A stamp
# records the package list that was satisfied, so later runs cost nothing.
DEPS_STAMP := build/.deps-ok
deps: $(DEPS_STAMP)
$(DEPS_STAMP): Makefile
	@missing=""; for p in $(DEB_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "deps: installing$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null || \
	    { echo "deps: apt-get install failed for:$$missing" >&2; exit 3; }; \
	fi
	@mkdir -p build && touch $@

$(BUILD)/obj/%.o: %.c $(wildcard engine/*.h) | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC $<")
	$(Q)$(CC) $(CFLAGS_BASE) -c $< -o $@

$(BUILD)/libengine.a: $(ENGINE_OBJ)
	@$(if $(Q),echo "  AR $@")
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/obj-fiu/%.o: %.c $(wildcard engine/*.h) | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC $< (fiu)")
	$(Q)$(CC) $(CFLAGS_BASE) -DFIU_ENABLE -c $< -o $@

$(BUILD)/libengine-fiu.a: $(ENGINE_FIU_OBJ)
	@$(if $(Q),echo "  AR $@")
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/obj-fiu/faults/%.o: faults/%.c $(wildcard faults/*.h engine/*.h) $(COMMON_H) | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC $<")
	$(Q)$(CC) $(CFLAGS_BASE) -Ifaults -DFIU_ENABLE -c $< -o $@

$(BUILD)/libfaults.a: $(FAULTS_OBJ)
	@$(if $(Q),echo "  AR $@")
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/powerloss: faults/powerloss.c $(BUILD)/libfaults.a $(BUILD)/libengine-fiu.a $(wildcard faults/*.h) $(COMMON_H)
	@$(if $(Q),echo "  LD $@")
	$(Q)$(CC) $(CFLAGS_BASE) -Ifaults -DFIU_ENABLE -o $@ $< $(BUILD)/libfaults.a $(BUILD)/libengine-fiu.a $(LDLIBS_FIU)

$(BUILD)/obj/tools/engine-tool/%.o: tools/engine-tool/%.c $(wildcard engine/*.h tools/engine-tool/*.h) $(COMMON_H) | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC $<")
	$(Q)$(CC) $(CFLAGS_BASE) -c $< -o $@

$(BUILD)/engine-tool: $(TOOL_OBJ) $(BUILD)/libengine.a
	@$(if $(Q),echo "  LD $@")
	$(Q)$(CC) $(CFLAGS_BASE) -o $@ $^ $(LDLIBS)

$(FAULT_TESTS): $(BUILD)/tests/%: tests/%.c $(BUILD)/libfaults.a $(BUILD)/libengine-fiu.a $(wildcard tests/*.h faults/*.h) $(COMMON_H)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC $<")
	$(Q)$(CC) $(CFLAGS_BASE) -Itests -Ifaults -DFIU_ENABLE -o $@ $< $(BUILD)/libfaults.a $(BUILD)/libengine-fiu.a $(LDLIBS_FIU) -lcriterion

# test_oracle*.c compile oracle/verdict.c into themselves (they test static rules).
$(patsubst tests/%.c,$(BUILD)/tests/%,$(wildcard tests/test_oracle*.c)): $(wildcard oracle/*.c oracle/*.h)

$(BUILD)/tests/%: tests/%.c $(BUILD)/libengine.a $(wildcard tests/*.h) $(COMMON_H)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC $<")
	$(Q)$(CC) $(CFLAGS_BASE) -Itests -o $@ $< $(BUILD)/libengine.a $(LDLIBS) -lcriterion

# libFuzzer target: clang, engine sources compiled into the fuzzer itself.
FUZZ_BIN := build/fuzz/fuzz_decoders
$(FUZZ_BIN): tests/fuzz/fuzz_decoders.c $(ENGINE_SRC) $(wildcard engine/*.h) | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  FUZZ $@")
	$(Q)$(CLANG) -std=gnu11 -O1 -g -D_GNU_SOURCE -DENG_FUZZING -pthread -I. -Iengine \
	  -fsanitize=fuzzer,address,undefined -o $@ $< $(ENGINE_SRC) $(LDLIBS)
fuzz: $(FUZZ_BIN)

# make test: every suite, one combined "N passed, N failed" last line.
test: all $(TEST_BIN) $(FUZZ_BIN)
	$(Q)BUILD=$(BUILD) FUZZ_SECONDS=$(FUZZ_SECONDS) tests/run_all.sh

# make test-c: the C suites alone, every Criterion binary and then
# tests/t_stress.sh, as make test runs them; CI runs them in the debug
# build (make test-c DEBUG=1).  Each suite's output is kept in
# $(BUILD)/test-logs/NAME.log and shown when it fails; last line
# "N passed, N failed" (Criterion binaries, and t_stress.sh's checks).
.PHONY: test-c
test-c: all $(TEST_BIN)
	$(Q)passed=0; failed=0; logs=$(BUILD)/test-logs; mkdir -p $$logs; \
	for t in $(TEST_BIN); do \
	  name=$${t##*/}; \
	  if $$t --jobs=1 >$$logs/$$name.log 2>&1; then passed=$$((passed + 1)); echo "ok $$name"; \
	  else failed=$$((failed + 1)); echo "not ok $$name"; grep -vE '^\[----\] |^$$' $$logs/$$name.log | tail -n 40; fi; \
	done; \
	BUILD=$(BUILD) bash tests/t_stress.sh >$$logs/t_stress.log 2>&1; rc=$$?; \
	cat $$logs/t_stress.log; \
	p=$$(grep -cE '^ok ' $$logs/t_stress.log); f=$$(grep -cE '^not ok ' $$logs/t_stress.log); \
	if [ $$rc -ne 0 ] && [ $$f -eq 0 ]; then f=1; fi; \
	passed=$$((passed + p)); failed=$$((failed + f)); \
	echo; echo "$$passed passed, $$failed failed"; [ $$failed -eq 0 ]

# Benchmarks (bench/): figures as JSON in build/bench/, never timed tests.
$(BUILD)/bench/%: bench/%.c $(BUILD)/libengine.a $(wildcard bench/*.h) $(COMMON_H)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC $<")
	$(Q)$(CC) $(CFLAGS_BASE) -o $@ $< $(BUILD)/libengine.a $(LDLIBS)

bench-deps: deps
	@for p in $(BENCH_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || { \
	    if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	    $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$p >/dev/null; }; \
	done

# LMDB's side of bench-engine links liblmdb only (no engine); bench-deps
# installs liblmdb-dev first.
$(BUILD)/bench/bench_lmdb: bench/bench_lmdb.c bench/bench_util.h | bench-deps
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC $<")
	$(Q)$(CC) $(CFLAGS_BASE) -o $@ $< -llmdb

bench-engine: all bench-deps $(BUILD)/bench/bench_engine $(BUILD)/bench/bench_lmdb
	$(Q)BUILD=$(BUILD) bench/run_engine.sh

# What data checksums cost in WAL and vacuum time (PostgreSQL's checksum
# experiment; aims in docs/engine.md, Cost aims): build/bench/wal.json.
.PHONY: bench-wal
bench-wal: all $(BUILD)/bench/bench_wal
	$(Q)BUILD=$(BUILD) bench/run_wal.sh

# What per key-value protection in the pool costs (docs/engine.md, Per
# key-value protection; Cost aims):
# build/bench/protection.json.
.PHONY: bench-protection
bench-protection: all $(BUILD)/bench/bench_protection
	$(Q)BUILD=$(BUILD) bench/run_protection.sh

# make bench-hashes: what a faster hash than the codes' CRC would buy on
# this CPU (bench/bench_hashes.c): build/bench/hashes.json.
.PHONY: bench-hashes
bench-hashes: $(BUILD)/bench/bench_hashes
	$(Q)$(BUILD)/bench/bench_hashes > $(BUILD)/bench/hashes.json.tmp && mv $(BUILD)/bench/hashes.json.tmp $(BUILD)/bench/hashes.json && cat $(BUILD)/bench/hashes.json

# What compiled-in, disarmed fault points cost: one source, built against
# the plain engine and against the fault build (libfiu initialized, no
# point enabled, never armed).
.PHONY: bench-faults
$(BUILD)/bench/bench_faults_plain: bench/bench_engine.c $(BUILD)/libengine.a $(wildcard bench/*.h)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC $< (plain)")
	$(Q)$(CC) $(CFLAGS_BASE) -o $@ $< $(BUILD)/libengine.a $(LDLIBS)

$(BUILD)/bench/bench_faults_fiu: bench/bench_engine.c $(BUILD)/libengine-fiu.a $(wildcard bench/*.h)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC $< (fiu)")
	$(Q)$(CC) $(CFLAGS_BASE) -DFIU_ENABLE -DBENCH_FIU -o $@ $< $(BUILD)/libengine-fiu.a $(LDLIBS_FIU)

bench-faults: all $(BUILD)/bench/bench_faults_plain $(BUILD)/bench/bench_faults_fiu
	$(Q)BUILD=$(BUILD) bench/run_faults.sh

# make bench-door: fillsync with the fault door armed (no fault) against
# the same engine without it, both psync (build/bench/door.json).
$(BUILD)/bench/bench_door: bench/bench_engine.c $(BUILD)/libengine.a $(BUILD)/libfaults.a $(wildcard bench/*.h)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC $< (door)")
	$(Q)$(CC) $(CFLAGS_BASE) -I. -DBENCH_DOOR -o $@ $< $(BUILD)/libfaults.a $(BUILD)/libengine.a $(LDLIBS) -ldl

bench-door: all $(BUILD)/bench/bench_faults_plain $(BUILD)/bench/bench_door
	$(Q)BUILD=$(BUILD) bench/run_door.sh

demo: all
	$(Q)BUILD=$(BUILD) tests/demo.sh

clean:
	rm -rf build

# ---- the oracle and the stress driver (stress/, oracle/) ----
# settle.c is compiled inside verdict.c (its last #include), not on its own.
ORACLE_SRC := $(filter-out oracle/settle.c,$(wildcard oracle/*.c))
ORACLE_OBJ := $(patsubst %.c,$(BUILD)/obj-oracle/%.o,$(ORACLE_SRC))
STRESS_SRC := $(wildcard stress/*.c)
STRESS_OBJ := $(patsubst %.c,$(BUILD)/obj-fiu/%.o,$(STRESS_SRC))
# The other engines the driver runs (stress --engine: adapter_sqlite.c,
# adapter_rocksdb.c), linked into every stress binary.
STRESS_ENGINE_LIBS := -lsqlite3 -lrocksdb
# RocksDB's version, from its C++ header (stress --version prints it;
# crashtest leaves out of the draw what the version's known bugs break).
ROCKSDB_VERSION := $(shell sed -n 's/^\#define ROCKSDB_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\).*/\2/p' \
  /usr/include/rocksdb/version.h 2>/dev/null | paste -sd. -)
$(BUILD)/obj-fiu/stress/adapter_rocksdb.o: CFLAGS_BASE += -DST_ROCKSDB_VERSION='"$(ROCKSDB_VERSION)"'

$(BUILD)/obj-oracle/oracle/verdict.o: oracle/settle.c
$(BUILD)/obj-oracle/oracle/%.o: oracle/%.c $(wildcard oracle/*.h) $(COMMON_H) | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC $<")
	$(Q)$(CC) $(CFLAGS_BASE) -c $< -o $@

$(BUILD)/liboracle.a: $(ORACLE_OBJ)
	@$(if $(Q),echo "  AR $@")
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/obj-fiu/stress/%.o: stress/%.c $(wildcard stress/*.h oracle/*.h faults/*.h engine/*.h) $(COMMON_H) | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC $<")
	$(Q)$(CC) $(CFLAGS_BASE) -DFIU_ENABLE -c $< -o $@

$(BUILD)/stress: $(STRESS_OBJ) $(BUILD)/liboracle.a $(BUILD)/libfaults.a $(BUILD)/libengine-fiu.a
	@$(if $(Q),echo "  LD $@")
	$(Q)$(CC) $(CFLAGS_BASE) -o $@ $(STRESS_OBJ) $(BUILD)/liboracle.a $(BUILD)/libfaults.a $(BUILD)/libengine-fiu.a $(LDLIBS_FIU) $(STRESS_ENGINE_LIBS)

# The adapters' contract suites: the adapter compiled in with
# adapter_engine.c (st_status_name, st_buf_free), promises.c (the
# tables' lookup) and the plain engine.
ADAPTER_TESTS := $(BUILD)/tests/test_adapter_sqlite_keeps_the_contract $(BUILD)/tests/test_adapter_rocksdb_keeps_the_contract
$(ADAPTER_TESTS): $(BUILD)/tests/test_adapter_%_keeps_the_contract: tests/test_adapter_%_keeps_the_contract.c \
  stress/adapter_%.c stress/adapter_engine.c stress/promises.c stress/rocksdb_log.c stress/adapter.h stress/promises.h stress/rocksdb_log.h \
  tests/adapter_helpers.h $(BUILD)/libengine.a
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC $<")
	$(Q)$(CC) $(CFLAGS_BASE) -Itests -Istress -o $@ $< stress/adapter_$*.c stress/adapter_engine.c stress/promises.c stress/rocksdb_log.c \
	  $(BUILD)/libengine.a \
	  $(LDLIBS) $(STRESS_ENGINE_LIBS) -lcriterion

# test_report_line links the oracle's library (report_line.o and what it needs).
$(BUILD)/tests/test_report_line: tests/test_report_line.c $(BUILD)/liboracle.a $(wildcard oracle/*.h)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC $<")
	$(Q)$(CC) $(CFLAGS_BASE) -Itests -o $@ $< $(BUILD)/liboracle.a $(LDLIBS) -lcriterion

# make bench-stress: verified ops/s against the bare engine (build/bench/stress.json).
.PHONY: bench-stress
bench-stress: all $(BUILD)/stress $(BUILD)/bench/bench_stress_bare
	$(Q)BUILD=$(BUILD) bench/run_stress.sh

# ---- planted bugs (tests/mutants.txt, docs/mutants.md) ----
# Each line of tests/mutants.txt names one deliberately planted bug, a
# compile-time switch ENG_BROKEN_<NAME> (dashes to underscores, upper case)
# in the engine or the fault library.  build/mutants/NAME/ holds the stress
# driver and the power-loss tool linked with that one bug compiled in; the
# real builds above never define any ENG_BROKEN_ switch.  ENG_MUTANT names
# the bug in the binaries' reports, so a mutant's run is never read as the
# real engine's.  `make mutants` measures how fast `crashtest.py simple`
# catches each one (crashtest.py mutants; build/mutants.json).
MUTANTS := $(shell awk '!/^[[:space:]]*(\#|$$)/ {print $$1}' tests/mutants.txt)
mutant_macro = ENG_BROKEN_$(shell echo '$(1)' | tr 'a-z-' 'A-Z_')
define mutant_rules
$(BUILD)/mutants/$(1)/obj/%.o: %.c $(wildcard engine/*.h faults/*.h) $(COMMON_H) | $(DEPS_STAMP)
	@mkdir -p $$(dir $$@)
	@$$(if $(Q),echo "  CC $$< (mutant $(1))")
	$(Q)$$(CC) $$(CFLAGS_BASE) -Ifaults -DFIU_ENABLE -D$(2) -DENG_MUTANT='"$(1)"' -c $$< -o $$@
$(BUILD)/mutants/$(1)/libengine.a: $(patsubst %.c,$(BUILD)/mutants/$(1)/obj/%.o,$(ENGINE_SRC))
	$(Q)rm -f $$@ && ar rcs $$@ $$^
$(BUILD)/mutants/$(1)/libfaults.a: $(patsubst %.c,$(BUILD)/mutants/$(1)/obj/%.o,$(FAULTS_SRC))
	$(Q)rm -f $$@ && ar rcs $$@ $$^
$(BUILD)/mutants/$(1)/stress: $$(STRESS_OBJ) $(BUILD)/liboracle.a $(BUILD)/mutants/$(1)/libfaults.a $(BUILD)/mutants/$(1)/libengine.a
	@$$(if $(Q),echo "  LD $$@")
	$(Q)$$(CC) $$(CFLAGS_BASE) -o $$@ $$(STRESS_OBJ) $(BUILD)/liboracle.a $(BUILD)/mutants/$(1)/libfaults.a $(BUILD)/mutants/$(1)/libengine.a $$(LDLIBS_FIU) $$(STRESS_ENGINE_LIBS)
$(BUILD)/mutants/$(1)/powerloss: faults/powerloss.c $(BUILD)/mutants/$(1)/libfaults.a $(BUILD)/mutants/$(1)/libengine.a $(wildcard faults/*.h) $(COMMON_H)
	@$$(if $(Q),echo "  LD $$@")
	$(Q)$$(CC) $$(CFLAGS_BASE) -Ifaults -DFIU_ENABLE -D$(2) -DENG_MUTANT='"$(1)"' -o $$@ $$< $(BUILD)/mutants/$(1)/libfaults.a $(BUILD)/mutants/$(1)/libengine.a $$(LDLIBS_FIU)
.PHONY: mutant-$(1)
mutant-$(1): $(BUILD)/mutants/$(1)/stress $(BUILD)/mutants/$(1)/powerloss
endef
$(foreach m,$(MUTANTS),$(eval $(call mutant_rules,$(m),$(call mutant_macro,$(m)))))

# make mutants: every planted bug against `simple` (300 s budget each, -j 2:
# up to two hours when nothing is caught, minutes when all are);
# MUTANTS_ARGS adds options (e.g. "--budget 120 skip-checksum").
.PHONY: mutants
mutants: all
	$(Q)./crashtest.py mutants -j 2 --build-dir $(BUILD) $(MUTANTS_ARGS)

# ---- planted harness bugs (tests/harness_mutants.txt, docs/mutants.md) ----
# Bugs planted in faults/ and oracle/, measured against the suites that
# guard the harness rather than against `simple`.  A harness bug reaches
# the tests through the fault library, the oracle, the stress driver, the
# power-loss tool and the suites that compile oracle/verdict.c into
# themselves, so each gets a whole build dir of its own: make, run again
# with BUILD=$(BUILD)/hmutants/NAME and HMUTANT=NAME, defines its switch
# for every object.  The engine's objects do not see the switch: they are
# copied (times kept) from $(BUILD) so only the harness is compiled again.
# The suites run with HMUTANT in their environment, so a make they start
# themselves (t_stress.sh builds the stress driver and the engine-bug
# drivers it runs) keeps the bug in.
HMUTANTS := $(shell awk '!/^[[:space:]]*(\#|$$)/ {print $$1}' tests/harness_mutants.txt)
ifneq ($(HMUTANT),)
CFLAGS_BASE += -D$(call mutant_macro,$(HMUTANT))
endif
# The Criterion suites that link faults/ or oracle/ (crashtest/mutants.py
# runs them, with tests/t_stress.sh and a few Python suites).
HMUTANT_SUITES := $(patsubst tests/%.c,tests/%,$(wildcard tests/test_faults*.c tests/test_powerloss*.c \
                    tests/test_lost_files*.c tests/test_oracle*.c tests/test_report_line.c))
# The engine-bug drivers t_stress.sh runs (its "broken" checks).
# The oracle's suites compile its sources in (oracle_helpers.h): they are
# rebuilt when it changes.
$(patsubst tests/%.c,$(BUILD)/tests/%,$(wildcard tests/test_oracle*.c)): $(wildcard oracle/*.c oracle/*.h)
# The expected state's check links the oracle's library (as test_report_line).
$(BUILD)/tests/test_oracle_expected_value_damaged_anywhere_is_wrong: tests/test_oracle_expected_value_damaged_anywhere_is_wrong.c \
  $(BUILD)/liboracle.a $(wildcard oracle/*.h)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC $<")
	$(Q)$(CC) $(CFLAGS_BASE) -Itests -o $@ $< $(BUILD)/liboracle.a $(LDLIBS) -lcriterion
HMUTANT_ENGINE_BUGS := $(shell sed -n 's|.*"$$B/\([a-z0-9-]*\)/stress".*|\1|p' tests/t_stress.sh | sort -u)
define hmutant_rules
.PHONY: hmutant-$(1)
hmutant-$(1): $(BUILD)/hmutants/$(1)/.built
$(BUILD)/hmutants/$(1)/.built: $(ENGINE_OBJ) $(ENGINE_FIU_OBJ) $(TOOL_OBJ) \
  $(foreach e,$(HMUTANT_ENGINE_BUGS),$(BUILD)/mutants/$(e)/libengine.a) FORCE
	@mkdir -p $(BUILD)/hmutants/$(1)
	$(Q)for d in obj/engine obj/tools obj-fiu/engine $(foreach e,$(HMUTANT_ENGINE_BUGS),mutants/$(e)/obj/engine); do \
	  if [ -d $(BUILD)/$$$$d ] && [ ! -d $(BUILD)/hmutants/$(1)/$$$$d ]; then \
	    mkdir -p $(BUILD)/hmutants/$(1)/$$$$(dirname $$$$d) && cp -a $(BUILD)/$$$$d $(BUILD)/hmutants/$(1)/$$$$d; fi; \
	done
	$(Q)$$(MAKE) --no-print-directory BUILD=$(BUILD)/hmutants/$(1) HMUTANT=$(1) all \
	  $(BUILD)/hmutants/$(1)/engine-tool $(BUILD)/hmutants/$(1)/stress $(BUILD)/hmutants/$(1)/powerloss \
	  $(addprefix $(BUILD)/hmutants/$(1)/,$(HMUTANT_SUITES)) \
	  $(foreach e,$(HMUTANT_ENGINE_BUGS),$(BUILD)/hmutants/$(1)/mutants/$(e)/stress)
	$(Q)echo '$(call mutant_macro,$(1))' >$$@
endef
$(foreach m,$(HMUTANTS),$(eval $(call hmutant_rules,$(m))))
.PHONY: FORCE
FORCE:

# make harness-mutants: every harness bug against the guarding suites
# (build/hmutants.json, and a "harness" table in the mutants report);
# HMUTANTS_ARGS adds options (e.g. "verdict-v3-swallowed-error-masked").
.PHONY: harness-mutants
harness-mutants: all
	$(Q)./crashtest.py mutants --harness --build-dir $(BUILD) $(HMUTANTS_ARGS)

# ---- the include graph: printed, and its rules checked (tools/deps_graph.py:
# no include circle, engine internals only inside engine/ (tests exempt),
# no source file over 1,200 lines) ----
.PHONY: deps-graph
deps-graph:
	$(Q)python3 tools/deps_graph.py

# ---- the house style (.clang-format for C; black and flake8 for Python,
# pyproject.toml and .flake8): make format applies clang-format and black,
# make lint checks the Python; make test checks all of it (tests/run_all.sh) ----
.PHONY: format lint
format:
	$(Q)git ls-files '*.c' '*.h' | xargs clang-format -i
	$(Q)python3 tools/py_style.py --fix black
lint:
	$(Q)python3 tools/py_style.py

# make bench-report: the benchmarks' JSON of build/bench drawn as one
# self-contained page (crashtest/htmlreport.py), build/bench/report.html.
.PHONY: bench-report deps-report
bench-report:
	$(Q)set -- $(wildcard $(BUILD)/bench/*.json); [ $$# -gt 0 ] || { echo "bench-report: no JSON in $(BUILD)/bench:" \
	  "run make bench-protection, bench-wal or bench-engine first" >&2; exit 2; }; \
	  ./crashtest.py report "$$@" -o $(BUILD)/bench/report.html

# make deps-report: Debian's chromium, which tests/test_crashtest.py uses to
# load the HTML report headless (the test is skipped without it) and which
# makes the README's screenshot (chromium --headless --screenshot).
deps-report:
	@dpkg-query -W -f='$${Status}' chromium 2>/dev/null | grep -q 'install ok installed' || { \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; }

# ---- crash tests (crashtest.py) ----
# make crashtest: the short mixed run (./crashtest.py simple, a few minutes)
# against this build; CRASHTEST_ARGS adds options, e.g. "--duration 600".
.PHONY: crashtest
crashtest: all
	$(Q)./crashtest.py simple --stress-binary $(BUILD)/stress --powerloss-binary $(BUILD)/powerloss $(CRASHTEST_ARGS)
