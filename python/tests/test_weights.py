"""rlswarm.weights.Publisher refuses what the actors could not load; that the
actors follow what it publishes is test_examples.py's python_learner run."""

import numpy as np
import pytest

from rlswarm import errors, weights


def test_versions_go_up_and_a_blob_holds_something(tmp_path):
    publisher = weights.Publisher()
    assert publisher.version == 0
    publisher.publish(3, {"head.weight": np.zeros((2, 64)), "head.bias": np.zeros(2, np.float64)})
    assert publisher.version == 3
    with pytest.raises(errors.InvalidArgument):
        publisher.publish(3, {"head.bias": np.zeros(2)})
    with pytest.raises(errors.InvalidArgument, match="nothing"):
        publisher.publish(4, {})
    publisher.write_endpoint_file(tmp_path / "weights")
    lines = (tmp_path / "weights").read_text().splitlines()
    assert lines == [publisher.endpoint, publisher.snapshot_endpoint]
    assert all(line.startswith("tcp://127.0.0.1:") for line in lines)
