# Kernel loop mounts for the tests that let the Linux kernel judge an image.
# Sourced, not run.
#
# kmount ARGS...: `mount ARGS...`, retried while the kernel answers EBUSY
# ("already mounted or mount point busy"). Under CI several tests attach,
# mount and detach loop devices at once. A loop device that was just released
# (an autoclear detach after umount, or udev still probing it) can refuse a
# mount for a moment. Such a refusal says nothing about the image, and it
# failed a clean CI run once (fs_kernel_compare, /dev/loop1). Any other error
# is returned at once, with mount's message on stderr.
# KMOUNT_TRIES (default 20) bounds the retries, 0.25 s apart.
kmount() {
	local tries=${KMOUNT_TRIES:-20} i err rc
	for ((i = 1; ; i++)); do
		if err=$(mount "$@" 2>&1); then
			[ "$i" -eq 1 ] || echo "NOTE: kernel mount $* succeeded on try $i (busy before)" >&2
			return 0
		else
			rc=$?
		fi
		case $err in *busy*) ;; *) break ;; esac
		[ "$i" -lt "$tries" ] || break
		sleep 0.25
	done
	printf '%s\n' "$err" >&2
	return $rc
}
