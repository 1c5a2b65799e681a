"""What kapstan would do on a running cluster: ``live`` reads it as the operator does, ``report`` prices it now against a plan from scratch, ``html`` draws that."""
