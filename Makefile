.PHONY: demo test lint pytest sanity molecule bench clean

demo:  ## run the provisioning playbook against a simulated COS node and report
	scripts/demo.sh

test:  ## the whole test suite
	scripts/test.sh

lint pytest molecule:
	scripts/test.sh $@

sanity:
	scripts/test.sh ansible-test

bench:
	scripts/bench.sh

clean:  ## everything the two commands made: .cache, .venv and the podman run root of molecule/debian-systemd
	rm -rf .cache .venv build tests/output
	rm -rf "$$(molecule/debian-systemd/podman.sh --print-settings | sed -n 's|^runroot=\(/[a-z]*/gpn-podman-[0-9a-f]*\)/run$$|\1|p')"
