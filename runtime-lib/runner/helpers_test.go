package runner_test

import (
	"encoding/json"
	"strconv"
)

func itoa(i int64) string { return strconv.FormatInt(i, 10) }

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }
