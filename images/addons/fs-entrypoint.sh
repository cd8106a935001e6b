#!/bin/sh
# The fs add-on's entrypoint (a file-system bucket: its files are its volume, /data here, mounted by the
# linked apps' instances at the path their CC_FS_BUCKET names). It runs as uid 10000, the apps' own user
# (docs/adr/0023), so everything the apps write is its own. Pier runs it as:
#   pier-addon serve        an idle process that ends on SIGTERM (the engine's init passes it on); it first
#                           finishes a restore whose swap a crash cut short
#   pier-addon ready        exits 0 once /data is a writable folder and no restore is half swapped
#   pier-addon backup       a gzip'ed tar of the bucket's files to stdout. Every file written and closed
#                           before the backup started is in it whole; a file written meanwhile may be in it
#                           as it was at some moment of its writing (tar warns: "file changed as we read it")
#   pier-addon restore F    restores the gzip'ed tar F all or nothing: F is checked (gzip's CRC, then the
#                           whole archive extracted into /data/.pier-restore-new); only then are the old files
#                           moved aside and the new ones moved in, each by one rename on the same filesystem
#                           (a journal lets `serve` finish a swap a crash interrupted); then the old ones go
set -eu
data=/data
new=$data/.pier-restore-new
old=$data/.pier-restore-old
journal=$data/.pier-restore-swap

# move_entries FROM TO: every entry of FROM (dot files too) but the restore's own, moved by rename into TO.
move_entries() {
  find "$1" -mindepth 1 -maxdepth 1 ! -name '.pier-restore-*' -exec mv -f -t "$2" -- {} +
}

phase() {
  echo "$1" >"$journal.part"
  mv -f "$journal.part" "$journal"
}

# Finishes a swap that was under way (its new files were whole: the journal is written after the check).
finish_swap() {
  [ -f "$journal" ] || return 0
  if [ "$(cat "$journal")" = out ]; then
    mkdir -p "$old"
    move_entries "$data" "$old"
    phase in
  fi
  move_entries "$new" "$data"
  rm -f "$journal"
  clean_up
}

# What a restore left aside (done, or cut short before its swap began). A file the server may not delete
# (written by root, in a release from before ADR 0023) stays; the swap is done all the same.
clean_up() {
  rm -rf "$old" "$new" 2>/dev/null || true
}

case "${1:-serve}" in
  serve)
    finish_swap
    clean_up
    exec sleep infinity
    ;;
  ready)
    [ -d "$data" ] && [ -w "$data" ] && [ ! -f "$journal" ]
    ;;
  backup)
    # tar's exit 1 says a file changed while it was read: the archive is whole; 2 is an error.
    tar -C "$data" --exclude='./.pier-restore-*' -czf - . || [ $? -eq 1 ]
    ;;
  restore)
    f=${2:?usage: pier-addon restore FILE}
    finish_swap
    clean_up
    if [ -e "$new" ] || [ -e "$old" ]; then
      echo "the previous restore's leftovers (/data/.pier-restore-*) cannot be deleted: the bucket's files are as they were" >&2
      exit 1
    fi
    if ! gzip -t "$f" 2>/dev/null; then
      echo "the backup is not a whole gzip'ed tar archive: the bucket's files are as they were" >&2
      exit 1
    fi
    mkdir "$new"
    if ! tar -C "$new" -xzpf "$f" 2>/tmp/restore.log; then
      clean_up
      echo "the archive could not be extracted (the bucket's files are as they were):" >&2
      tail -n 3 /tmp/restore.log >&2
      exit 1
    fi
    mkdir "$old"
    phase out
    finish_swap
    ;;
  *) echo "pier-addon: unknown command '$1'" >&2; exit 2 ;;
esac
