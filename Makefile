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

clean:
	rm -rf .cache .venv build tests/output
