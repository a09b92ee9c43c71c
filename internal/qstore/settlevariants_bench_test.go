package qstore_test

func settleVariants() []settleVariant {
	return []settleVariant{{"ack", nil}, {"nack", errBench}}
}
