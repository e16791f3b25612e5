#!/usr/bin/env bash
# nostall-test: release-only (long application run; its C code runs under ASan in the unit tests)
# sqlite3 on the FUSE mount in every data mode (tests/lib/apps_common.sh):
# autocommit inserts with synchronous=FULL (each one fsyncs) in WAL and in
# rollback-journal (DELETE) mode, then PRAGMA integrity_check = ok and the
# row count and checksum on the mount; after unmount e2fsck -fn is clean and
# the kernel's ext3 reads the same files and sqlite3 there agrees (ok, same
# count and checksum). CI: 600 inserts per database (150 under ASan);
# NOSTALL_APPS_FULL=1: the issue's 10,000.
. "$(dirname "$0")/../lib/apps_common.sh"
apps_need_fuse
apps_need sqlite3:sqlite3
N=$(apps_size 600 10000 150)
echo "apps_sqlite: $N inserts per database, modes: $APPS_MODES"

sql_inserts() { # journal_mode
	echo "PRAGMA journal_mode=$1;"
	echo "PRAGMA synchronous=FULL;"
	echo "CREATE TABLE t(id INTEGER PRIMARY KEY, k TEXT UNIQUE, v BLOB);"
	# Autocommit: one transaction (and its fsyncs) per insert.
	for ((i = 1; i <= N; i++)); do
		echo "INSERT INTO t(k, v) VALUES('key$i', randomblob($(( (i * 37) % 700 + 50 ))));"
	done
}
summary() { # db
	sqlite3 "$1" "PRAGMA integrity_check; SELECT count(*), sum(length(v)), count(DISTINCT k) FROM t;"
}

sqlite_work() { # mnt mode
	local jm out
	for jm in wal delete; do
		out=$(sql_inserts "$jm" | sqlite3 "$1/$jm.db" 2>&1 | grep -v "^$jm\$")
		[ -z "$out" ] || fail "data=$2 $jm: sqlite3 said: $(echo "$out" | head -3)"
		out=$(summary "$1/$jm.db")
		echo "$out" >"$APPS_TMP/$jm.summary"
		[ "$(echo "$out" | head -1)" = ok ] || fail "data=$2 $jm: integrity_check: $out"
		[ "$(echo "$out" | tail -1 | cut -d'|' -f1,3)" = "$N|$N" ] ||
			fail "data=$2 $jm: want $N rows, got: $(echo "$out" | tail -1)"
		[ ! -e "$1/$jm.db-journal" ] || fail "data=$2 $jm: a hot journal was left behind"
	done
}

sqlite_kernel() { # kmnt mode: read-only copies (sqlite may want to write -shm)
	local jm
	for jm in wal delete; do
		cp "$1/$jm.db" "$APPS_TMP/k-$jm.db"
		[ "$(summary "$APPS_TMP/k-$jm.db")" = "$(cat "$APPS_TMP/$jm.summary")" ] ||
			fail "data=$2 $jm: the kernel's copy of the database differs: $(summary "$APPS_TMP/k-$jm.db" | tr '\n' ' ')"
		rm -f "$APPS_TMP/k-$jm.db"*
	done
}

for mode in $APPS_MODES; do
	apps_cycle "$mode" 256M sqlite_work sqlite_kernel
done
apps_finish apps_sqlite
